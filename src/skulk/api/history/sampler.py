"""The loops that fill the history: a sample every interval, a marker per event worth
one. Both run beside the node's API."""

import time
from collections.abc import Callable

import anyio
from loguru import logger

from skulk.api.history.markers import markers_of
from skulk.api.history.recorder import MetricsHistory, NodeGauges
from skulk.api.history.samples import SAMPLE_INTERVAL_SECONDS
from skulk.api.history.totals import read_totals
from skulk.api.metrics import ApiMetrics
from skulk.shared.apply import EventOutOfOrder, apply
from skulk.shared.replica import StateReplica


async def sample_forever(history: MetricsHistory, metrics: ApiMetrics,
                         gauges: Callable[[], NodeGauges], *,
                         clock: Callable[[], float] = time.time,
                         interval: float = SAMPLE_INTERVAL_SECONDS) -> None:
    """Every `interval` seconds: read the counters and gauges into the history."""
    while True:
        history.record(clock(), read_totals(metrics), gauges())
        await anyio.sleep(interval)


async def mark_forever(history: MetricsHistory, replica: StateReplica, *,
                       clock: Callable[[], float] = time.time) -> None:
    """Note a marker for each applied event that makes one. The State before each event
    is kept here by applying the same events in the same order (apply is pure)."""
    before, master = replica.state, replica.master_node
    events = replica.subscribe()
    async with events:
        async for indexed in events:
            for marker in markers_of(before, master, indexed, clock()):
                history.note(marker)
            try:
                before = apply(before, indexed)
            except EventOutOfOrder:
                logger.debug("history: resynchronising its State copy with the replica")
                before = replica.state
            master = indexed.master_node
