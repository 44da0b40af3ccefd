"""The pure half of `skulk.testing.netns`: namespace names, which leftovers a sweep removes,
and the `ip`/`tc` command lines for each operation. Nothing here runs anything."""

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

PREFIX = "skulk"
SUBNET = "10.77.0"
MAX_HOSTS = 250  # addresses .1 to .250 of one /24
HOST_LINK = "eth0"
BRIDGE = "br0"
OTHER_BRIDGE = "br1"  # the smaller side of a partition
# Rules that drop a cut peer's packets come before the table of local addresses, which
# the kernel puts at preference 0 and which would otherwise accept them first.
CUT_PREFERENCE_BASE = 100
LOCAL_TABLE_PREFERENCE = 1000
# The rate caps earlier bench results were measured with; tbf, since this kernel has no
# netem (no added latency, only a rate).
TBF_BURST = "256kbit"
TBF_LATENCY = "50ms"

# A run owned by a process: "<pid>-<hex>"; a run a person names (the CLI) starts with a
# letter, so a sweep never takes it for a process that has ended.
_OWNED_RUN = re.compile(r"(?P<pid>[0-9]+)-[0-9a-f]+")
_HUMAN_RUN = re.compile(r"[a-z][a-z0-9]{0,11}")
_NAMESPACE = re.compile(rf"{PREFIX}-(?P<run>[a-z0-9]+(?:-[0-9a-f]+)?)-(?:h[0-9]+|seg)")


@dataclass(frozen=True)
class Step:
    """One command line; `may_fail` for removals of what may already be gone."""

    argv: tuple[str, ...]
    may_fail: bool = False


def owned_run_id(pid: int, token: str) -> str:
    """The run id of hosts a process makes and owns (`token` tells its runs apart)."""
    run = f"{pid}-{token}"
    if not _OWNED_RUN.fullmatch(run):
        raise ValueError(f"a run token is lowercase hex, not {token!r}")
    return run


def check_human_run_id(run: str) -> str:
    """A run name a person picks: a letter, then up to 11 letters or digits."""
    if not _HUMAN_RUN.fullmatch(run):
        raise ValueError(f"a run name is a lowercase letter then up to 11 letters or "
                         f"digits, not {run!r}")
    return run


def host_namespace(run: str, host: int) -> str:
    return f"{PREFIX}-{run}-h{host}"


def segment_namespace(run: str) -> str:
    """The namespace holding the bridge every host's link plugs into."""
    return f"{PREFIX}-{run}-seg"


def segment_port(host: int) -> str:
    """The segment's end of host `host`'s link (interface names stop at 15 characters)."""
    return f"h{host}"


def address(host: int) -> str:
    return f"{SUBNET}.{host + 1}"


def run_of(namespace: str) -> str | None:
    """The run a namespace of this module belongs to; None for anyone else's."""
    match = _NAMESPACE.fullmatch(namespace)
    return match["run"] if match else None


def owner_pid(run: str) -> int | None:
    """The process owning a run; None for a run a person named."""
    match = _OWNED_RUN.fullmatch(run)
    return int(match["pid"]) if match else None


def namespaces_of(run: str, listed: Iterable[str]) -> list[str]:
    return sorted(name for name in listed if run_of(name) == run)


def host_count(run: str, listed: Iterable[str]) -> int:
    """How many hosts a run has, from the namespaces that exist."""
    return sum(1 for name in listed if run_of(name) == run and not name.endswith("-seg"))


def leftovers(listed: Iterable[str], alive: Callable[[int], bool]) -> list[str]:
    """Namespaces of runs whose owning process has ended."""
    dead: list[str] = []
    for name in listed:
        run = run_of(name)
        pid = None if run is None else owner_pid(run)
        if pid is not None and not alive(pid):
            dead.append(name)
    return sorted(dead)


def parse_netns_list(output: str) -> list[str]:
    """Names from `ip netns list` ("name" or "name (id: 3)" per line)."""
    return [line.split()[0] for line in output.splitlines() if line.strip()]


def up_steps(run: str, count: int) -> list[Step]:
    """A bridge in its own namespace and `count` hosts plugged into it, each with one link
    (`eth0`) at 10.77.0.<host + 1>/24."""
    if not 1 <= count <= MAX_HOSTS:
        raise ValueError(f"between 1 and {MAX_HOSTS} hosts, not {count}")
    segment = segment_namespace(run)
    steps = [Step(("ip", "netns", "add", segment)),
             Step(("ip", "-n", segment, "link", "add", BRIDGE, "type", "bridge")),
             Step(("ip", "-n", segment, "link", "set", BRIDGE, "up"))]
    for host in range(count):
        steps += _host_steps(run, host)
    return steps


def _host_steps(run: str, host: int) -> list[Step]:
    namespace, segment, port = host_namespace(run, host), segment_namespace(run), \
        segment_port(host)
    in_host = ("ip", "-n", namespace)
    return [
        Step(("ip", "netns", "add", namespace)),
        Step((*in_host, "link", "add", HOST_LINK, "type", "veth", "peer", "name", port,
              "netns", segment)),
        Step(("ip", "-n", segment, "link", "set", port, "master", BRIDGE)),
        Step(("ip", "-n", segment, "link", "set", port, "up")),
        Step((*in_host, "addr", "add", f"{address(host)}/24", "dev", HOST_LINK)),
        Step((*in_host, "link", "set", "lo", "up")),
        Step((*in_host, "link", "set", HOST_LINK, "up")),
        # Multicast (discovery) leaves by the host's link, as on a machine with one NIC.
        Step((*in_host, "route", "add", "224.0.0.0/4", "dev", HOST_LINK)),
        Step((*in_host, "rule", "add", "pref", str(LOCAL_TABLE_PREFERENCE), "lookup",
              "local")),
        Step((*in_host, "rule", "del", "pref", "0")),
    ]


def down_steps(namespaces: Iterable[str]) -> list[Step]:
    """Deleting a namespace deletes its links; the bridge's go with the segment's."""
    return [Step(("ip", "netns", "del", name), may_fail=True) for name in namespaces]


def _drop_from(run: str, host: int, peer: int) -> Step:
    # In the receiver, so the sender sees no error: its packets vanish as on a dead path.
    return Step(("ip", "-n", host_namespace(run, host), "rule", "add", "from",
                 address(peer), "iif", HOST_LINK, "blackhole", "pref",
                 str(CUT_PREFERENCE_BASE + peer)))


def _stop_dropping(run: str, host: int, peer: int) -> Step:
    return Step(("ip", "-n", host_namespace(run, host), "rule", "del", "pref",
                 str(CUT_PREFERENCE_BASE + peer)), may_fail=True)


def cut_steps(run: str, a: int, b: int) -> list[Step]:
    """Hosts a and b stop hearing each other's unicast; both still hear everyone else."""
    if a == b:
        raise ValueError(f"a host cannot be cut from itself ({a})")
    # Removing first makes a repeated cut harmless (the kernel refuses a duplicate rule).
    return [*heal_steps(run, a, b), _drop_from(run, a, b), _drop_from(run, b, a)]


def heal_steps(run: str, a: int, b: int) -> list[Step]:
    return [_stop_dropping(run, a, b), _stop_dropping(run, b, a)]


def partition_steps(run: str, count: int, group: Sequence[int]) -> list[Step]:
    """Move `group`'s links onto a bridge of their own: two switches no longer joined.
    Each host moves in one step, so a partition never passes through a state where some
    pairs across it still talk (cutting pair by pair did, and a mesh routed around the
    pairs already cut)."""
    inside = sorted(set(group))
    if not inside or len(inside) >= count or not all(0 <= h < count for h in inside):
        raise ValueError(f"a partition takes some of hosts 0..{count - 1}, not {group}")
    segment = segment_namespace(run)
    return [Step(("ip", "-n", segment, "link", "add", OTHER_BRIDGE, "type", "bridge"),
                 may_fail=True),  # there already after an earlier partition
            Step(("ip", "-n", segment, "link", "set", OTHER_BRIDGE, "up")),
            *(Step(("ip", "-n", segment, "link", "set", segment_port(host), "master",
                    OTHER_BRIDGE)) for host in inside)]


def port_steps(run: str, host: int, up: bool) -> list[Step]:
    """Unplug (or plug back) a host's link at the segment: the host sees its carrier go."""
    return [Step(("ip", "-n", segment_namespace(run), "link", "set", segment_port(host),
                  "up" if up else "down"))]


def heal_all_steps(run: str, count: int) -> list[Step]:
    """Every host plugged into the one bridge, every pairwise cut healed."""
    segment = segment_namespace(run)
    steps = [Step(("ip", "-n", segment, "link", "set", segment_port(host), "master", BRIDGE))
             for host in range(count)]
    steps.append(Step(("ip", "-n", segment, "link", "del", OTHER_BRIDGE), may_fail=True))
    steps += [step for host in range(count) for step in port_steps(run, host, True)]
    return steps + [step for a in range(count) for b in range(a + 1, count)
                    for step in heal_steps(run, a, b)]


def rate_steps(run: str, host: int, rate: str | None) -> list[Step]:
    """Cap a host's outgoing rate (`1gbit`, `200mbit`); None removes the cap."""
    in_host = ("tc", "-n", host_namespace(run, host), "qdisc")
    if rate is None:
        return [Step((*in_host, "del", "dev", HOST_LINK, "root"), may_fail=True)]
    return [Step((*in_host, "replace", "dev", HOST_LINK, "root", "tbf", "rate", rate,
                  "burst", TBF_BURST, "latency", TBF_LATENCY))]


def exec_argv(run: str, host: int, argv: Sequence[str], core: int | None = None
              ) -> list[str]:
    """`argv` run inside a host, pinned to CPU `core` when given (as if it were that
    machine's only core)."""
    pinned = [] if core is None else ["taskset", "-c", str(core)]
    return ["ip", "netns", "exec", host_namespace(run, host), *pinned, *argv]
