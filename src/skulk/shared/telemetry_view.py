"""The telemetry view: each node's newest readings, last writer wins, expired on read."""

import time
from collections.abc import Callable, Mapping

from skulk.shared.types.ids import NodeId
from skulk.shared.types.telemetry import NodeTelemetry

DEFAULT_TELEMETRY_TTL_SECONDS = 30.0


class TelemetryView:
    """Holds readings by node; a reading older than the TTL is treated as absent."""

    def __init__(
        self,
        *,
        ttl_seconds: float = DEFAULT_TELEMETRY_TTL_SECONDS,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._ttl = ttl_seconds
        self._clock = clock
        self._readings: dict[NodeId, NodeTelemetry] = {}

    def update(self, reading: NodeTelemetry) -> None:
        current = self._readings.get(reading.node_id)
        if current is None or reading.stamp >= current.stamp:
            self._readings[reading.node_id] = reading

    def live(self) -> Mapping[NodeId, NodeTelemetry]:
        cutoff = self._clock() - self._ttl
        return {n: r for n, r in self._readings.items() if r.stamp >= cutoff}
