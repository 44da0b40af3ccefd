"""The telemetry view: each node's newest readings, last writer wins, expired on read."""

import time
from collections.abc import AsyncIterator, Callable, Mapping

import anyio.lowlevel

from skulk.shared.types.ids import NodeId
from skulk.shared.types.telemetry import NodeTelemetry


class TelemetryView:
    """Holds readings by node; a node not heard from for its reading's TTL is absent.

    Liveness is measured on this node's clock (time since the reading arrived), so a peer
    whose clock is off by minutes is neither invisible nor immortal; its stamps only order
    its own readings: the newest stamp wins, and a node's own readings are never
    overwritten by gossip (an old copy of them can still be circulating).
    """

    def __init__(
        self,
        *,
        own_node: NodeId | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._own_node = own_node
        self._clock = clock
        self._readings: dict[NodeId, NodeTelemetry] = {}
        self._heard_at: dict[NodeId, float] = {}
        # Readings from nodes this view did not hold live: a newcomer, which has not heard
        # the unchanged readings others send only every so often (`reading_changes.py`).
        self.newcomers_heard = 0

    def set_own_node(self, node_id: NodeId) -> None:
        self._own_node = node_id

    async def follow(self, readings: AsyncIterator[NodeTelemetry]) -> None:
        """Keep every reading the telemetry plane brings, yielding after each: a queue of
        them (every node's at a cold start) would otherwise be read in one step, which at
        120 nodes held the event loop 50 ms."""
        async for reading in readings:
            self.update(reading)
            await anyio.lowlevel.checkpoint()

    def update(self, reading: NodeTelemetry, *, gossip: bool = True) -> None:
        if gossip and reading.node_id == self._own_node:
            return
        current = self._readings.get(reading.node_id)
        now = self._clock()
        if gossip and (current is None or
                       now - self._heard_at[reading.node_id] > current.card_ttl_seconds):
            self.newcomers_heard += 1
        if current is None or reading.stamp >= current.stamp:
            self._readings[reading.node_id] = reading
            self._heard_at[reading.node_id] = now

    def live(self) -> Mapping[NodeId, NodeTelemetry]:
        now = self._clock()
        return {n: r for n, r in self._readings.items()
                if now - self._heard_at[n] <= r.card_ttl_seconds}
