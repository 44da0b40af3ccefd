"""When a runner has taken too long: to report at all, or to load and warm up.

A runner that hangs (a stopped process, a wedged load, a node swapping itself to death)
would otherwise stay `loading` forever while requests wait for it. The load deadline
scales with the weights: a slow disk still reads `LOAD_BYTES_PER_SECOND`.
"""

from dataclasses import dataclass

from skulk.shared.types.runners import (
    RunnerCreated,
    RunnerLoaded,
    RunnerLoading,
    RunnerStatus,
    RunnerWarmingUp,
)

FIRST_REPORT_SECONDS = 60.0
LOAD_BASE_SECONDS = 120.0
LOAD_BYTES_PER_SECOND = 20e6

_LOADING = (RunnerCreated, RunnerLoading, RunnerLoaded, RunnerWarmingUp)


@dataclass(frozen=True)
class RunnerDeadlines:
    """How long a runner may take; `--runner-deadline` sets both bases."""

    first_report_seconds: float = FIRST_REPORT_SECONDS
    load_base_seconds: float = LOAD_BASE_SECONDS
    load_bytes_per_second: float = LOAD_BYTES_PER_SECOND

    @classmethod
    def scaled(cls, base_seconds: float | None) -> "RunnerDeadlines":
        """Both bases set to `base_seconds` (`--runner-deadline`; tests use a short one);
        None: the defaults."""
        if base_seconds is None:
            return cls()
        return cls(first_report_seconds=base_seconds, load_base_seconds=base_seconds)

    def load_seconds(self, weights_bytes: int) -> float:
        return self.load_base_seconds + weights_bytes / self.load_bytes_per_second


DEFAULT_DEADLINES = RunnerDeadlines()


def overdue(status: RunnerStatus | None, started_at: float, load_asked_at: float | None,
            now: float, weights_bytes: int, deadlines: RunnerDeadlines) -> str | None:
    """Why the runner is overdue, or None. `started_at`: its process started;
    `load_asked_at`: the worker asked it to load (None: not yet)."""
    if status is None:
        waited = now - started_at
        if waited > deadlines.first_report_seconds:
            return (f"the runner did not report within {deadlines.first_report_seconds:.0f} s "
                    "of starting")
        return None
    if load_asked_at is None or not isinstance(status, _LOADING):
        return None
    limit = deadlines.load_seconds(weights_bytes)
    if now - load_asked_at > limit:
        return (f"the runner did not load and warm up {weights_bytes / 1e6:.0f} MB of weights "
                f"within {limit:.0f} s (it was {status.kind})")
    return None
