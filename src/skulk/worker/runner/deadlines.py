"""When a runner has taken too long: to report at all, to load and warm up, or to show
progress on the requests it runs.

A runner that hangs (a stopped process, a wedged load, a node swapping itself to death)
would otherwise stay `loading` forever while requests wait for it. The load deadline
scales with the weights: a slow disk still reads `LOAD_BYTES_PER_SECOND`. A runner that
runs requests but has said nothing for `STALL_SECONDS` (a stalled pipeline hop, a stopped
process), or nothing since they started for `FIRST_TOKEN_SECONDS` (the first token may
wait for a long prompt's prefill), is treated the same way.
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
FIRST_TOKEN_SECONDS = 120.0
# Shorter than the API's 60 s stream idle timeout, so the runner is killed (and its node
# cooled off) before a client's stream gives up on it.
STALL_SECONDS = 30.0

_LOADING = (RunnerCreated, RunnerLoading, RunnerLoaded, RunnerWarmingUp)


@dataclass(frozen=True)
class RunnerDeadlines:
    """How long a runner may take; `--runner-deadline` sets both bases."""

    first_report_seconds: float = FIRST_REPORT_SECONDS
    load_base_seconds: float = LOAD_BASE_SECONDS
    load_bytes_per_second: float = LOAD_BYTES_PER_SECOND
    first_token_seconds: float = FIRST_TOKEN_SECONDS
    stall_seconds: float = STALL_SECONDS

    @classmethod
    def scaled(cls, base_seconds: float | None) -> "RunnerDeadlines":
        """Every base set to `base_seconds` (`--runner-deadline`; tests use a short one);
        None: the defaults."""
        if base_seconds is None:
            return cls()
        return cls(first_report_seconds=base_seconds, load_base_seconds=base_seconds,
                   first_token_seconds=base_seconds, stall_seconds=base_seconds)

    def load_seconds(self, weights_bytes: int) -> float:
        return self.load_base_seconds + weights_bytes / self.load_bytes_per_second


DEFAULT_DEADLINES = RunnerDeadlines()


@dataclass(frozen=True)
class Progress:
    """What a runner that speaks for its instance (rank 0) has shown of the requests it
    runs: since when it has been silent, and whether any of them produced a chunk yet."""

    quiet_since: float
    produced: bool


def stalled(progress: Progress | None, now: float, deadlines: RunnerDeadlines) -> str | None:
    """Why a runner with requests in flight counts as hung, or None (None `progress`: no
    request in flight, or a rank that sends no chunks)."""
    if progress is None:
        return None
    limit = deadlines.stall_seconds if progress.produced else deadlines.first_token_seconds
    quiet = now - progress.quiet_since
    if quiet <= limit:
        return None
    if progress.produced:
        return f"a running request made no progress for {quiet:.0f} s (limit {limit:.0f} s)"
    return f"a running request got no first token within {limit:.0f} s"


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
