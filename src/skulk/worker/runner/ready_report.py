"""When a runner says it is `running` or `ready` again: `running` when a request joins a
runner that was not running, `ready` once it has stayed without requests for
`READY_AFTER_IDLE_SECONDS`, not at the step its last request ended.

Each status a runner reports is an event the master indexes and every node applies (the
log, the replica, its listeners, the worker's plan): a few tenths of a millisecond of a
node's Python each. A client that sends requests one after another made its runner flip
`running` -> `ready` -> `running` between every two, and those two events were work on
the way to the next request's first token (3.2 ms later for a request sent right after
another than for one sent 50 ms later, bench/README.md). The status tells people and
dashboards what the runner does (both count as serving, `is_serving`); staying `running`
for a moment after the last request costs only that moment's lag there.
"""

READY_AFTER_IDLE_SECONDS = 0.25


class ReadyReport:
    """A runner's busy/idle reports: `joined` and `drained` as requests come and go;
    `due` says when to report `RunnerReady`."""

    def __init__(self, after_seconds: float = READY_AFTER_IDLE_SECONDS) -> None:
        self._after = after_seconds
        self._running = False  # reported `RunnerRunning`, and not `RunnerReady` since
        self._ready_at: float | None = None

    def joined(self) -> bool:
        """A request joined: True when the runner must report `RunnerRunning` now (it had
        reported `RunnerReady`, or nothing yet, since it last did)."""
        self._ready_at = None
        if self._running:
            return False
        self._running = True
        return True

    def drained(self, now: float) -> None:
        """The runner's last request ended at `now`."""
        if self._running:
            self._ready_at = now + self._after

    def due(self, now: float) -> bool:
        """True, once, when the runner has been without requests long enough to report
        `RunnerReady`."""
        if self._ready_at is None or now < self._ready_at:
            return False
        self._ready_at = None
        self._running = False
        return True

    def wait(self, now: float) -> float | None:
        """Seconds until `due` turns True (None: nothing to report)."""
        return None if self._ready_at is None else max(self._ready_at - now, 0.0)
