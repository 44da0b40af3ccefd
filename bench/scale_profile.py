"""Where one lone event's CPU goes in the master's node: event-loop steps and functions.

    .venv/bin/python bench/scale_profile.py              # 10 nodes, 200 events, 20 a second
    .venv/bin/python bench/scale_profile.py --nodes 3 --events 100 --top 40
    .venv/bin/python bench/scale_profile.py --phases     # thread CPU per call, no cProfile

N whole nodes on the in-memory bus (bench/scale_harness.py), formed and frozen as
bench/scale.py does; then events proposed one at a time by random followers. While they
flow, every event-loop step the master's node runs is counted and timed by task, and
profiled with cProfile (that step alone, so the other nodes' work stays out). Prints the
steps per event by task, their CPU per event (thread time, cProfile's own cost included:
read the step counts and the functions' shares, not the total, against bench/scale.py),
and the functions taking the most time in the master's steps (cumulative, per event).
With `--phases`, no cProfile: the steps' own thread CPU, and that of each step of the
path (`PHASES`: checking, decoding, indexing, the log, sealing...) timed around its calls
in the master's node, so what is left is the event loop's own cost.
Not a results file: a tool for finding what to cut.
"""

import argparse
import asyncio
import contextvars
import cProfile
import functools
import importlib
import pstats
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
from loguru import logger

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.scale_harness import NODE, ScaleCluster, StepClock  # noqa: E402
from bench.scale_load import _event_path, _propose, _until_applied  # noqa: E402
from bench.scale_modelling import freeze_formed_cluster, release_frozen  # noqa: E402

# (module, attribute path, label): the calls timed with `--phases`, outermost first (a
# phase's time includes those nested in it: indexing holds applying and the log).
PHASES = (
    ("skulk.trust.envelope", "MessageVerifier.open", "check the proposal (unpack + verify)"),
    ("skulk.routing.router", "from_msgpack", "decode the proposal"),
    ("skulk.master.master", "Master._stage_local", "admit + index (below)"),
    ("skulk.master.master", "apply", "  applying to the master's State"),
    ("skulk.master.event_log", "DiskEventLog.append", "  the log's append (encode, write)"),
    ("skulk.master.event_log", "encode_record", "    encoding the record"),
    ("skulk.master.event_log_sync", "LogSyncer.written", "    telling the fsync thread"),
    ("skulk.routing.router", "to_msgpack", "encode the indexed batch"),
    ("skulk.trust.envelope", "MessageSigner.seal", "seal it (sign + pack)"),
    ("skulk.shared.replica", "StateReplica.receive", "the node's own replica"),
    ("skulk.node_reactions", "end_failed_streams", "reactions: streams"),
)


class MasterSteps:
    """Counts, times and profiles the steps run in one node's context."""

    def __init__(self, node: str, *, profiled: bool = True) -> None:
        self.node = node
        self.steps: Counter[str] = Counter()
        self.seconds: defaultdict[str, float] = defaultdict(float)
        self.profile = cProfile.Profile()
        self.profiled = profiled
        self.phase_calls: Counter[str] = Counter()
        self.phase_seconds: defaultdict[str, float] = defaultdict(float)
        self._original: Callable[[asyncio.Handle], None] | None = None

    @contextmanager
    def phases_timed(self) -> Iterator[None]:
        """Wrap each of `PHASES` to charge its thread CPU to its label (in this node's
        steps only); put back on leaving."""
        undo: list[tuple[Any, str, Any]] = []
        for module_name, path, label in PHASES:
            owner: Any = importlib.import_module(module_name)
            *parents, name = path.split(".")
            for parent in parents:
                owner = getattr(owner, parent)
            original = getattr(owner, name)
            setattr(owner, name, self._timed(original, label))
            undo.append((owner, name, original))
        try:
            yield
        finally:
            for owner, name, original in reversed(undo):
                setattr(owner, name, original)

    def _timed(self, function: Callable[..., Any], label: str) -> Callable[..., Any]:
        @functools.wraps(function)
        def timed(*args: Any, **kwargs: Any) -> Any:
            if NODE.get() != self.node:
                return function(*args, **kwargs)
            started = time.thread_time()
            try:
                return function(*args, **kwargs)
            finally:
                self.phase_seconds[label] += time.thread_time() - started
                self.phase_calls[label] += 1
        return timed

    def install(self) -> None:
        original = self._original = asyncio.events.Handle._run

        def counted(handle: asyncio.Handle) -> None:
            context: contextvars.Context = handle._context  # type: ignore[attr-defined]
            if context.get(NODE) != self.node:
                original(handle)
                return
            task = getattr(handle._callback, "__self__", None)  # type: ignore[attr-defined]
            name = task.get_name() if isinstance(task, asyncio.Task) else "(callback)"
            started = time.thread_time()
            if self.profiled:
                self.profile.enable()
            original(handle)
            if self.profiled:
                self.profile.disable()
            self.steps[name] += 1
            self.seconds[name] += time.thread_time() - started

        asyncio.events.Handle._run = counted  # type: ignore[method-assign,assignment]

    def uninstall(self) -> None:
        if self._original is not None:
            asyncio.events.Handle._run = self._original  # type: ignore[method-assign,assignment]


async def profile(nodes: int, events: int, rate: float, top: int, sort: str,
                  phases: bool) -> None:
    clock = StepClock()
    with tempfile.TemporaryDirectory(prefix="skulk-profile-") as root:
        async with anyio.create_task_group() as tasks:
            cluster = ScaleCluster(tasks, Path(root), clock, election_timeout=1.0)
            for i in range(nodes):
                cluster.start(f"n{i:03d}")
            master_id = await cluster.wait_converged(timeout=60)
            master = cluster.members[cluster.name_of(master_id)]
            await anyio.sleep(1.0)
            freeze_formed_cluster()
            followers = [m for m in cluster.members.values() if m is not master]
            first = master.node.replica.next_index()
            steps = MasterSteps(master.name, profiled=not phases)
            steps.install()
            try:
                with steps.phases_timed() if phases else _nothing():
                    await _propose(followers, events, rate, burst=1)
                    await _until_applied(cluster, first + events, timeout=60 + nodes)
            finally:
                steps.uninstall()
            indexed = master.node.replica.next_index() - first
            tasks.cancel_scope.cancel()
    release_frozen()
    if phases:
        _report_phases(steps, indexed)
    else:
        _report(steps, indexed, top, sort)


@contextmanager
def _nothing() -> Iterator[None]:
    yield


def _report_phases(steps: MasterSteps, indexed: int) -> None:
    on_path = {name: seconds for name, seconds in steps.seconds.items() if _event_path(name)}
    total = 1e6 * sum(on_path.values()) / indexed
    print(f"{indexed} events; the master's event-path steps: "
          f"{sum(steps.steps[n] for n in on_path) / indexed:.2f} a event, {total:.1f} us "
          "thread CPU a event (timers included)")
    for name, seconds in sorted(on_path.items(), key=lambda item: -item[1]):
        print(f"  {steps.steps[name] / indexed:5.2f} steps {1e6 * seconds / indexed:7.1f} us"
              f"  {name}")
    top_level = 0.0
    for _, _, label in PHASES:
        per_event = 1e6 * steps.phase_seconds[label] / indexed
        if not label.startswith(" "):
            top_level += per_event
        print(f"  {steps.phase_calls[label] / indexed:5.2f} calls {per_event:7.1f} us  {label}")
    print(f"  the rest (the loop's steps, waking, the lock, ordering, the timers): "
          f"{total - top_level:.1f} us")


def _report(steps: MasterSteps, indexed: int, top: int, sort: str) -> None:
    print(f"{indexed} events indexed; the master's steps per event, by task "
          "(event path / idle planes):")
    for name, count in steps.steps.most_common():
        path = "event" if _event_path(name) else "idle "
        print(f"  {path} {count / indexed:6.2f} steps  "
              f"{1e6 * steps.seconds[name] / indexed:8.1f} us (profiled)  {name}")
    on_path = sum(c for n, c in steps.steps.items() if _event_path(n))
    print(f"  event-path steps per event: {on_path / indexed:.2f}")
    stats = pstats.Stats(steps.profile)
    stats.sort_stats(sort)
    print(f"\nThe master's functions by {sort} time (totals over {indexed} events):")
    stats.print_stats(top)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=10)
    parser.add_argument("--events", type=int, default=200)
    parser.add_argument("--rate", type=float, default=20.0)
    parser.add_argument("--top", type=int, default=60, help="functions listed")
    parser.add_argument("--sort", default="cumulative", choices=("cumulative", "tottime"),
                        help="the functions' order")
    parser.add_argument("--phases", action="store_true",
                        help="time the path's steps (PHASES) instead of cProfile")
    args = parser.parse_args()
    logger.disable("skulk")
    anyio.run(profile, args.nodes, args.events, args.rate, args.top, args.sort,
              args.phases)


if __name__ == "__main__":
    main()
