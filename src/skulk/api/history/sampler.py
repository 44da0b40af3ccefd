"""The loops that fill the history: a sample every interval, a marker per event worth
one. Both run beside the node's API."""

import math
import time
from collections.abc import Callable

import anyio

from skulk.api.history.markers import MARKING_KINDS, markers_of
from skulk.api.history.recorder import MetricsHistory, NodeGauges
from skulk.api.history.samples import SAMPLE_INTERVAL_SECONDS
from skulk.api.history.totals import read_totals
from skulk.api.metrics import ApiMetrics
from skulk.shared.replica import StateReplica


async def sample_forever(history: MetricsHistory, metrics: ApiMetrics,
                         gauges: Callable[[], NodeGauges], *,
                         clock: Callable[[], float] = time.time,
                         interval: float = SAMPLE_INTERVAL_SECONDS) -> None:
    """Read the counters and gauges into the history now (the baseline), then at every
    multiple of `interval` of the wall clock, each sample stamped with its tick: nodes
    whose clocks agree sample at the same moments, so their samples meet in one time slot
    when added up. A tick missed (a loop held up past it) is skipped, not sampled twice."""
    history.record(clock(), read_totals(metrics), gauges())
    tick = _next_tick(clock(), interval)
    while True:
        await anyio.sleep(max(tick - clock(), 0.0))
        history.record(tick, read_totals(metrics), gauges())
        tick = max(tick + interval, _next_tick(clock(), interval))


def _next_tick(now: float, interval: float) -> float:
    return (math.floor(now / interval) + 1) * interval


async def mark_forever(history: MetricsHistory, replica: StateReplica, *,
                       clock: Callable[[], float] = time.time) -> None:
    """Note a marker for each applied event that makes one, read against the State the
    replica applied it to (a copy kept here applied every event a second time). Only the
    kinds that can make one come (`MARKING_KINDS`); a session's master changes only with
    its snapshot, which is one of them, so `master` is the master of every event since."""
    master = replica.master_node
    events = replica.subscribe_with_before(kinds=MARKING_KINDS)
    async with events:
        async for before, indexed in events:
            for marker in markers_of(before, master, indexed, clock()):
                history.note(marker)
            master = indexed.master_node
