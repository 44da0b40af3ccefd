"""When a node's reading is worth sending: it changed in what a reader acts on, or the
last one sent is getting old.

A node reads itself every couple of seconds, but free memory, free disk and probe
round-trips move a little every time, and sending each reading to every node makes the
telemetry plane N² messages per period. So readings are compared on what placement and
people read: free memory and disk coarsened to a step of their total, the probed edges
without their times and round-trips. A reading that differs from the last one sent goes
out at once; an unchanged one goes out every `FULL_REFRESH_SECONDS` and when a node
appears (within `NEWCOMER_GAP_SECONDS`), and says it stays valid for
`READING_TTL_SECONDS`, so a receiver drops a node only after three refreshes went missing.
"""

from collections.abc import Hashable

from skulk.shared.types.telemetry import NodeTelemetry, Reachability

FULL_REFRESH_SECONDS = 15.0
READING_TTL_SECONDS = 3 * FULL_REFRESH_SECONDS
NEWCOMER_GAP_SECONDS = 6.0
# Free memory, disk and GPU memory count as changed when they cross a step of this share of
# their total (1/50: 2 %; 1.3 GB of a 64 GB machine).
FREE_SPACE_STEPS = 50


def _coarse(free: int, total: int) -> int:
    return free if total <= 0 else free * FREE_SPACE_STEPS // total


def material(reading: NodeTelemetry) -> Hashable:
    """What of `reading` a change of is worth sending at once."""
    reach = reading.reachability
    edges = tuple((edge.node_id, tuple(a.address for a in edge.addresses))
                  for edge in reach.peers)
    steady = reading.model_copy(update={
        "stamp": 0.0,
        "memory_available_bytes": _coarse(reading.memory_available_bytes,
                                          reading.memory_total_bytes),
        "disk_free_bytes": _coarse(reading.disk_free_bytes, reading.disk_total_bytes),
        "gpus": [gpu.model_copy(update={
            "vram_free_bytes": _coarse(gpu.vram_free_bytes, gpu.vram_total_bytes)})
            for gpu in reading.gpus],
        "reachability": Reachability(addresses=reach.addresses,
                                     listen_ports=reach.listen_ports),
    })
    return steady.model_dump_json(), edges


class ReadingChanges:
    """Remembers what was last sent and when; says whether a new reading should go."""

    def __init__(self, refresh_seconds: float = FULL_REFRESH_SECONDS) -> None:
        self._refresh_seconds = refresh_seconds
        self._sent: Hashable | None = None
        self._sent_at = float("-inf")

    def should_send(self, reading: NodeTelemetry, now: float, newcomer: bool = False) -> bool:
        """True (and remembered as sent) when `reading` changed, the last one is old, or
        a `newcomer` appeared (who has none of the unchanged readings) and the last one
        went out over `NEWCOMER_GAP_SECONDS` ago: nodes arriving one after another over a
        cold start do not each make every node send again."""
        key = material(reading)
        age = now - self._sent_at
        if key == self._sent and age < self._refresh_seconds and not (
                newcomer and age >= NEWCOMER_GAP_SECONDS):
            return False
        self._sent, self._sent_at = key, now
        return True
