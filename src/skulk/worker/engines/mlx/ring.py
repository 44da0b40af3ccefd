"""Forming an mlx.distributed ring between runner processes, and the deadlines that guard it.

Ranks are started by the worker, not by `mlx.launch` (which keeps a core busy): each
process writes the hostfile the ring backend reads (a JSON list with, per rank, a list of
"ip:port" addresses), points `MLX_HOSTFILE` / `MLX_RANK` at it and calls
`mx.distributed.init(backend="ring", strict=True)`, once its two neighbours are up
(ring_rendezvous.py: mlx gives up connecting after 31 s of backoff).

Two things can wedge a rank forever, and both end the process instead:

- Ring init blocks, holding the GIL, until every neighbour has connected and shaken
  hands. No Python thread can run meanwhile, so the connect deadline is enforced by
  faulthandler's C watchdog, which prints a traceback and exits with status 1.
- A collective (send, recv, all_sum, all_gather) waits for peers inside `mx.eval`, which
  does release the GIL, so a `DeadlineWatchdog` thread can end the process with
  `COLLECTIVE_DEADLINE_EXIT_CODE` and a clear message on stderr.

Either way the worker sees the runner exit, reports the failure and the instance is
placed again; the ring is never reused after one of its ranks gave up.
"""

import faulthandler
import json
import os
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from ipaddress import ip_address
from pathlib import Path

import mlx.core as mx

# The exit status of a runner whose collective overran its deadline (as `timeout(1)` uses).
COLLECTIVE_DEADLINE_EXIT_CODE = 124


class GroupError(RuntimeError):
    """The ring could not be formed, or a collective failed because a peer went away."""


class GroupConnectTimeout(GroupError):
    """Ring init came back only after its deadline: treat the ring as unusable."""


class CollectiveTimeout(GroupError):
    """A collective overran its deadline (raised only where expiry does not end the process)."""


def parse_host(host: str) -> tuple[str, int]:
    """Split "ip:port" (IPv6 as "[::1]:port"), or raise GroupError saying what is wrong."""
    address, sep, port_text = host.rpartition(":")
    if not sep or not port_text.isdigit():
        raise GroupError(f"ring host {host!r} is not of the form 'ip:port'")
    address = address.removeprefix("[").removesuffix("]")
    try:
        ip_address(address)
    except ValueError as error:
        raise GroupError(f"ring host {host!r} does not start with an IP address") from error
    port = int(port_text)
    if not 0 < port < 65536:
        raise GroupError(f"ring host {host!r} has a port outside 1..65535")
    return address, port


def hostfile_document(hosts: Sequence[str]) -> list[list[str]]:
    """The ring backend's hostfile: rank i listens on (and is reached at) hosts[i]."""
    for host in hosts:
        parse_host(host)
    return [[host] for host in hosts]


def write_hostfile(directory: Path, hosts: Sequence[str]) -> Path:
    """Write the hostfile into `directory` under a fresh name and return its path."""
    handle, name = tempfile.mkstemp(prefix="mlx-ring-", suffix=".json", dir=directory)
    with os.fdopen(handle, "w") as file:
        json.dump(hostfile_document(hosts), file)
    return Path(name)


def ring_environment(hostfile: Path, rank: int) -> dict[str, str]:
    """The variables `mx.distributed.init(backend="ring")` reads."""
    return {"MLX_HOSTFILE": str(hostfile), "MLX_RANK": str(rank)}


def check_ring_shape(rank: int, hosts: Sequence[str], deadline_seconds: float) -> None:
    """GroupError, before any connecting, for a ring that cannot be formed as asked."""
    if not 0 <= rank < len(hosts):
        raise GroupError(f"rank {rank} is outside a ring of {len(hosts)} hosts")
    if len(hosts) < 2:
        raise GroupError("a ring needs at least two hosts; use SoloGroup for one process")
    if deadline_seconds <= 0:
        raise GroupError("the connect deadline must be positive")
    hostfile_document(hosts)


def init_ring(rank: int, hosts: Sequence[str],
              deadline_seconds: float) -> mx.distributed.Group:
    """Connect this process as `rank` of the ring over `hosts`; the raw mlx Group.

    If a neighbour never shows up the process exits once `deadline_seconds` have passed
    (faulthandler prints "Timeout" and the stack on stderr, exit status 1).
    """
    check_ring_shape(rank, hosts, deadline_seconds)
    hostfile = write_hostfile(Path(tempfile.gettempdir()), hosts)
    os.environ.update(ring_environment(hostfile, rank))
    sys.stderr.write(
        f"skulk ring: rank {rank} of {len(hosts)} connecting to {', '.join(hosts)}; "
        f"a neighbour missing after {deadline_seconds:g} s ends this process\n")
    sys.stderr.flush()
    started = time.monotonic()
    faulthandler.dump_traceback_later(deadline_seconds, exit=True, file=sys.stderr)
    try:
        group = mx.distributed.init(backend="ring", strict=True)
    except RuntimeError as error:
        raise GroupError(f"ring init failed for rank {rank} of {hosts}: {error}") from error
    finally:
        faulthandler.cancel_dump_traceback_later()
        hostfile.unlink(missing_ok=True)
    elapsed = time.monotonic() - started
    if elapsed > deadline_seconds:
        raise GroupConnectTimeout(
            f"ring init took {elapsed:.1f} s, past its {deadline_seconds:g} s deadline")
    if group.size() != len(hosts) or group.rank() != rank:
        raise GroupError(
            f"ring init gave rank {group.rank()} of {group.size()}, "
            f"expected {rank} of {len(hosts)}: was the ring already initialised?")
    return group


def exit_process(message: str) -> None:
    """Say why on stderr and end the process at once (no cleanup: a peer may be wedged)."""
    sys.stderr.write(f"skulk ring: {message}; exiting\n")
    sys.stderr.flush()
    os._exit(COLLECTIVE_DEADLINE_EXIT_CODE)


class DeadlineWatchdog:
    """One daemon thread that calls `on_expire` when a guarded section overruns.

    Arming and disarming only take a lock, so guarding every collective of every token
    costs microseconds. Sections do not nest: one collective runs at a time per process.
    """

    def __init__(self, on_expire: Callable[[str], None] = exit_process) -> None:
        self._on_expire = on_expire
        self._condition = threading.Condition()
        self._deadline: float | None = None
        self._what = ""
        self._expired = False
        self._thread: threading.Thread | None = None
        # When the watching thread will next look (None: only when notified).
        self._wake_at: float | None = None

    @contextmanager
    def guard(self, seconds: float, what: str) -> Iterator[None]:
        """Run the body under a deadline; raise CollectiveTimeout if it overran it."""
        with self._condition:
            if self._deadline is not None:
                raise RuntimeError(f"{what}: a deadline is already armed for {self._what}")
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._watch, name="collective-deadline", daemon=True)
                self._thread.start()
            self._deadline = time.monotonic() + seconds
            self._what = what
            self._expired = False
            # Wake the watcher only if it would look too late: back-to-back collectives
            # then cost a lock, not a thread switch each.
            if self._wake_at is None or self._wake_at > self._deadline:
                self._condition.notify()
        try:
            yield
        finally:
            with self._condition:
                self._deadline = None
                expired = self._expired
        if expired:
            raise CollectiveTimeout(f"{what} overran its {seconds:g} s deadline")

    def _watch(self) -> None:
        while True:
            with self._condition:
                while self._deadline is None or self._deadline > time.monotonic():
                    self._wake_at = self._deadline
                    timeout = None if self._deadline is None else (
                        self._deadline - time.monotonic())
                    self._condition.wait(timeout)
                message = f"{self._what} overran its deadline (a peer is wedged or gone)"
                self._expired = True
                self._deadline = None
            self._on_expire(message)
