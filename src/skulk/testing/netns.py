"""Test hosts made of Linux network namespaces: N machines on one Ethernet segment, for
tests and benches that need real addresses, partitions and capped links on one box.

    from skulk.testing.netns import Hosts, missing

    if (reason := missing()) is not None:
        ...                                   # one line: not root, no `ip`, ...
    with Hosts(count=3) as hosts:             # hosts 0, 1, 2 at 10.77.0.1, .2, .3 (/24)
        hosts.address(1)                      # "10.77.0.2"
        hosts.run(0, ["curl", f"http://{hosts.address(1)}:8000/"])  # argv inside host 0
        subprocess.Popen(hosts.command(2, argv, core=1))  # inside host 2, pinned to CPU 1
        hosts.cut(0, 1)                       # 0 and 1 no longer hear each other
        hosts.partition([0])                  # 0 on a switch of its own
        hosts.isolate(2)                      # unplug 2's link (it sees its carrier go)
        hosts.heal(0, 1)                      # one pair back; rejoin(2) plugs 2 back in
        hosts.heal_all()                      # every link plugged in, every cut healed
        hosts.rate(0, "1gbit")                # cap 0's outgoing rate (tc tbf); None: off

Each host is a namespace with loopback and one link, `eth0`, into a bridge that lives in a
namespace of its own: the machine's own namespace is never touched. A cut is a pair of
policy rules, one in each host, that drop the other's packets on arrival: the sender sees
no error, its packets vanish as on a broken path. Unicast only: a cut pair still hears
each other's ARP and multicast. A partition moves one side's links onto a second bridge,
as if two switches were unplugged from each other (cutting it pair by pair let a mesh
route around the pairs already cut). `isolate` sets the bridge's end of the link down
instead, as if the cable were pulled. This kernel has no netem, so links get a rate, not a latency.

Names carry a run id, `skulk-<pid>-<token>-h<i>` and `-seg`, so runs side by side never
meet. `Hosts.__enter__` first sweeps the namespaces of runs whose process has ended (a
test killed mid-run leaves its hosts behind). Hosts a person makes with the command line
carry a name instead of a process id and stay until `down`:

    python -m skulk.testing.netns up 3                # run "cli"; --run NAME for another
    python -m skulk.testing.netns exec 1 --core 1 -- python -m http.server
    python -m skulk.testing.netns cut 0 1 | heal [0 1] | isolate 2 | rejoin 2
    python -m skulk.testing.netns rate 0 200mbit | rate 0 off
    python -m skulk.testing.netns list | sweep | down

Needs root, iproute2's `ip` and `tc`, and a kernel with network namespaces; `missing()`
says in one line which of these a machine lacks.
"""

import os
import secrets
import shutil
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from types import TracebackType

from skulk.testing import netns_commands as commands
from skulk.testing.netns_commands import Step

Execute = Callable[[Step], None]
STEP_SECONDS = 30.0


class HostsError(RuntimeError):
    """A command that builds or changes the hosts failed; the message names it."""


def missing() -> str | None:
    """What this machine lacks to make hosts, in one line; None when it has it all."""
    if not Path("/proc/self/ns/net").exists():
        return "this kernel has no network namespaces (/proc/self/ns/net is missing)"
    if os.geteuid() != 0:
        return "network namespaces need root"
    for tool, package in (("ip", "iproute2"), ("tc", "iproute2")):
        if shutil.which(tool) is None:
            return f"no `{tool}` on PATH (install {package})"
    return None


def execute(step: Step) -> None:
    """Run one step; a failure raises unless the step may fail."""
    result = subprocess.run(step.argv, capture_output=True, text=True, timeout=STEP_SECONDS)
    if result.returncode != 0 and not step.may_fail:
        raise HostsError(f"`{' '.join(step.argv)}` exited {result.returncode}: "
                         f"{result.stderr.strip()}")


def listed_namespaces() -> list[str]:
    result = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True,
                            check=True, timeout=STEP_SECONDS)
    return commands.parse_netns_list(result.stdout)


def process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process, alive
    return True


def sweep(execute_step: Execute = execute) -> list[str]:
    """Remove the namespaces of runs whose owning process has ended; the names removed."""
    dead = commands.leftovers(listed_namespaces(), process_alive)
    for step in commands.down_steps(dead):
        execute_step(step)
    return dead


class Hosts:
    """`count` hosts on one segment, made on `__enter__` (or `up()`) and removed on
    `__exit__` (or `down()`). `run` names hosts a person keeps (see the module's text);
    left out, this process owns them under a fresh id."""

    def __init__(self, count: int, *, run: str | None = None,
                 execute_step: Execute = execute) -> None:
        self.count = count
        self.run_id = (commands.owned_run_id(os.getpid(), secrets.token_hex(3)) if run is None
                       else commands.check_human_run_id(run))
        self._execute = execute_step

    @classmethod
    def existing(cls, run: str) -> "Hosts":
        """Hosts made earlier (by the command line) under the name `run`."""
        count = commands.host_count(run, listed_namespaces())
        if count == 0:
            raise HostsError(f"no hosts of run {run!r}: make them with `up`")
        return cls(count, run=run)

    def __enter__(self) -> "Hosts":
        self.up()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.down()

    def up(self) -> None:
        """Make the hosts, after sweeping dead runs' and removing this run's old ones."""
        if (reason := missing()) is not None:
            raise HostsError(f"cannot make test hosts: {reason}")
        sweep(self._execute)
        self.down()
        try:
            self._do(commands.up_steps(self.run_id, self.count))
        except BaseException:
            self.down()
            raise

    def down(self) -> None:
        """Remove this run's namespaces (processes still inside keep theirs until they
        end)."""
        self._do(commands.down_steps(commands.namespaces_of(self.run_id,
                                                            listed_namespaces())))

    def namespace(self, host: int) -> str:
        return commands.host_namespace(self.run_id, self._checked(host))

    def address(self, host: int) -> str:
        return commands.address(self._checked(host))

    def command(self, host: int, argv: Sequence[str], *, core: int | None = None
                ) -> list[str]:
        """`argv` as run inside `host`, pinned to CPU `core` when given: hand it to
        `subprocess.Popen` for a process that outlives the call."""
        return commands.exec_argv(self.run_id, self._checked(host), argv, core)

    def run(self, host: int, argv: Sequence[str], *, core: int | None = None,
            timeout: float | None = None, check: bool = True
            ) -> subprocess.CompletedProcess[str]:
        """Run `argv` inside `host` to its end; its output, as text."""
        return subprocess.run(self.command(host, argv, core=core), capture_output=True,
                              text=True, timeout=timeout, check=check)

    def cut(self, a: int, b: int) -> None:
        """Hosts a and b stop hearing each other; each still hears the rest."""
        self._do(commands.cut_steps(self.run_id, self._checked(a), self._checked(b)))

    def heal(self, a: int, b: int) -> None:
        self._do(commands.heal_steps(self.run_id, self._checked(a), self._checked(b)))

    def partition(self, group: Sequence[int]) -> None:
        """Split the segment in two: `group`'s links move onto a bridge of their own, so
        no packet crosses between the sides and each side keeps its own."""
        self._do(commands.partition_steps(self.run_id, self.count,
                                          [self._checked(h) for h in group]))

    def isolate(self, host: int) -> None:
        """Unplug `host` from the segment."""
        self._do(commands.port_steps(self.run_id, self._checked(host), up=False))

    def rejoin(self, host: int) -> None:
        self._do(commands.port_steps(self.run_id, self._checked(host), up=True))

    def heal_all(self) -> None:
        self._do(commands.heal_all_steps(self.run_id, self.count))

    def rate(self, host: int, rate: str | None) -> None:
        """Cap `host`'s outgoing rate (`1gbit` for a LAN, `200mbit` for Wi-Fi); None
        removes the cap."""
        self._do(commands.rate_steps(self.run_id, self._checked(host), rate))

    def _checked(self, host: int) -> int:
        if not 0 <= host < self.count:
            raise ValueError(f"host {host} is not one of 0..{self.count - 1}")
        return host

    def _do(self, steps: Sequence[Step]) -> None:
        for step in steps:
            self._execute(step)


if __name__ == "__main__":
    from skulk.testing.netns_cli import main

    sys.exit(main())
