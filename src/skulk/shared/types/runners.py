"""Runner status: where one runner subprocess is in its life."""

from typing import Annotated, Literal

from pydantic import Field

from skulk.shared.types.base import WireModel


class RunnerFetching(WireModel):
    """The node is fetching the weights this runner will load; no process exists yet."""

    kind: Literal["fetching"] = "fetching"
    done_bytes: int = Field(ge=0, description="Bytes fetched so far.")
    total_bytes: int = Field(ge=0, description="Bytes in all.")
    source: str = Field(max_length=512, description="Where from: `peer NODE` or `hub REPO`.")


class RunnerCreated(WireModel):
    """The process exists; no model is loaded."""

    kind: Literal["created"] = "created"


class RunnerLoading(WireModel):
    """The model is being loaded."""

    kind: Literal["loading"] = "loading"


class RunnerLoaded(WireModel):
    """The model is in memory and not yet warmed up."""

    kind: Literal["loaded"] = "loaded"


class RunnerWarmingUp(WireModel):
    """A first throwaway generation is running."""

    kind: Literal["warming_up"] = "warming_up"


class RunnerReady(WireModel):
    """Idle and able to take tasks."""

    kind: Literal["ready"] = "ready"


class RunnerRunning(WireModel):
    """Serving at least one task."""

    kind: Literal["running"] = "running"


class RunnerFailed(WireModel):
    """The runner died or could not load; `error` says why."""

    kind: Literal["failed"] = "failed"
    error: str = Field(description="Why the runner failed.")


class RunnerShutdown(WireModel):
    """The runner was stopped on purpose."""

    kind: Literal["shutdown"] = "shutdown"


RunnerStatus = Annotated[
    RunnerFetching
    | RunnerCreated
    | RunnerLoading
    | RunnerLoaded
    | RunnerWarmingUp
    | RunnerReady
    | RunnerRunning
    | RunnerFailed
    | RunnerShutdown,
    Field(discriminator="kind"),
]


def is_serving(status: object) -> bool:
    return isinstance(status, RunnerReady | RunnerRunning)
