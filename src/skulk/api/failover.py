"""A request whose instance fails goes on elsewhere: the node that took it resubmits it as
a continuation (`continuation.py`) to another ready instance of the model, placing one on
the surviving nodes when none is left, and the client's stream goes on.

Attempts are bounded; the error reaches the client only when no instance can serve.
"""

import time

import anyio
from loguru import logger

from skulk.api.context import ApiContext
from skulk.api.continuation import RECOVERABLE, Continuation
from skulk.api.errors import ApiError
from skulk.api.instance_view import instance_status
from skulk.api.serving import place_instance
from skulk.api.submit import Submitted, release, submit
from skulk.api.tracing import now_us
from skulk.shared.types.chunks import ErrorChunk, TokenChunk
from skulk.shared.types.commands import PlaceInstance
from skulk.shared.types.ids import (
    CommandId,
    InstanceId,
    ModelId,
    NodeId,
    new_command_id,
    new_instance_id,
)
from skulk.shared.types.instances import Instance
from skulk.shared.types.state import State
from skulk.shared.types.tasks import GenerationParams
from skulk.shared.types.traces import Span

MAX_FAILOVERS = 3


class Failover:
    """One request's failovers: what it resumes from, and where it must not go again."""

    def __init__(self, context: ApiContext, params: GenerationParams) -> None:
        self.context = context
        self.continuation = Continuation(params)
        self.attempts = 0
        self.excluded_instances: list[InstanceId] = []
        self.excluded_nodes: set[NodeId] = set()
        self.spans: list[Span] = []  # `api.failover.<reason>`, one per failover

    def should_retry(self, error: ErrorChunk) -> bool:
        # After a failover, "no instance" means the one just found went away meanwhile.
        kind_ok = error.error_kind in RECOVERABLE or (
            self.attempts > 0 and error.error_kind == "model_not_found")
        return kind_ok and self.attempts < MAX_FAILOVERS

    async def resume(self, failed: CommandId, error: ErrorChunk) -> Submitted | TokenChunk | \
            ErrorChunk:
        """Go on elsewhere after `error` ended the attempt `failed`: the next attempt, the
        final chunk when nothing was left to generate, or the error that ends the request."""
        started_us, started = now_us(), time.monotonic()
        self.attempts += 1
        self._exclude(failed)
        await release(self.context, failed, cancel=True)  # a hung runner must stop too
        model_id = self.continuation.params.model_id
        logger.warning("request {} failed over (attempt {}, {}: {}); resuming after {} tokens",
                       failed, self.attempts, error.error_kind, error.message,
                       len(self.continuation.sent))
        outcome: Submitted | TokenChunk | ErrorChunk
        resumed = self.continuation.resumed()
        if isinstance(resumed, TokenChunk):
            outcome = resumed
        else:
            try:
                await serve_elsewhere(self.context, model_id, self.excluded_instances,
                                      self.excluded_nodes)
                outcome = await submit(self.context, resumed, self.excluded_instances)
            except ApiError as failure:
                outcome = ErrorChunk(error_kind="runner_failed", message=(
                    f"the instance serving this request failed ({error.message}) and no "
                    f"other could take over: {failure.message}"))
        self.context.operations.metrics.failovers.labels(error.error_kind).inc()
        self.context.operations.metrics.failover_seconds.observe(time.monotonic() - started)
        self.spans.append(Span(name=f"api.failover.{error.error_kind}",
                               node_id=self.context.cluster.node_id, start_us=started_us,
                               duration_us=max(now_us() - started_us, 0)))
        return outcome

    def give_up(self, error: ErrorChunk) -> ErrorChunk:
        """The error as the client sees it once no more failovers are tried."""
        if self.attempts == 0:
            return error
        return error.model_copy(update={"message": f"{error.message} (after {self.attempts} "
                                        f"failover{'s' if self.attempts > 1 else ''})"})

    def _exclude(self, failed: CommandId) -> None:
        """The failed attempt's instance, and its nodes (the dead ones, or all when none
        died: a live node whose runner failed is picked again only when nothing else fits)."""
        state = self.context.cluster.replica.state
        task = state.task_for_command(failed)
        if task is None:
            return
        self.excluded_instances.append(task.instance_id)
        instance = state.instances.get(task.instance_id)
        if instance is None:
            return
        nodes = {shard.node_id for shard in instance.shards.values()}
        live = self.context.cluster.live_nodes()
        self.excluded_nodes |= (nodes - set(live)) or nodes


def usable_instances(state: State, model_id: ModelId, excluded: list[InstanceId],
                     live: set[NodeId] | frozenset[NodeId],
                     failed_too: bool = False) -> list[Instance]:
    """Instances of the model that did not fail this request, have no failed runner
    (unless `failed_too`) and run on live nodes only."""
    return [i for i in state.instances_of(model_id) if i.instance_id not in excluded
            and all(shard.node_id in live for shard in i.shards.values())
            and (failed_too or instance_status(state, i) != "failed")]


async def serve_elsewhere(context: ApiContext, model_id: ModelId,
                          excluded_instances: list[InstanceId],
                          excluded_nodes: set[NodeId]) -> None:
    """Return once an instance other than the excluded ones is ready; place one (away
    from the excluded nodes if anything else fits) when none is left. When nothing else
    fits and a failed instance is still placed on live nodes (its worker restarts its
    runner), it is taken off `excluded_instances` and waited for instead of placing a
    second copy beside it. Raises `ApiError`."""
    def usable(state: State) -> list[Instance]:
        return usable_instances(state, model_id, excluded_instances,
                                set(context.cluster.live_nodes()) | {context.cluster.node_id})

    lock = context.requests.placement_locks.setdefault(model_id, anyio.Lock())
    async with lock:  # streams failing over together place one instance, not one each
        if not usable(context.cluster.replica.state):
            if context.settings.auto_place:
                await _place_away_from(context, model_id, excluded_instances,
                                       excluded_nodes)
            # Placement is the operator's: wait for the master's replacement (a split
            # instance whose rank ended is placed again) or the operator's.
            elif await context.cluster.replica.wait_for(
                    lambda s: bool(usable(s)), context.settings.ready_timeout_seconds) is None:
                raise ApiError(503, f"no other instance of '{model_id}' came up and "
                               "automatic placement is off", type="server_error",
                               code="runner_failed")

    def placed(state: State) -> list[Instance]:
        # Failed ones too: a runner that died comes back (its worker restarts it).
        return usable_instances(state, model_id, excluded_instances,
                                set(context.cluster.live_nodes()) | {context.cluster.node_id},
                                failed_too=True)

    def settled(state: State) -> bool:
        candidates = placed(state)
        return not candidates or any(instance_status(state, i) == "ready"
                                     for i in candidates)

    state = await context.cluster.replica.wait_for(settled, context.settings.ready_timeout_seconds)
    if state is None or not any(instance_status(state, i) == "ready" for i in placed(state)):
        raise ApiError(503, f"the new instance of '{model_id}' did not become ready",
                       type="server_error", code="runner_failed")


async def _place_away_from(context: ApiContext, model_id: ModelId,
                           excluded_instances: list[InstanceId],
                           excluded_nodes: set[NodeId]) -> None:
    live = set(context.cluster.live_nodes()) | {context.cluster.node_id}
    live_excluded = excluded_nodes & live
    try:
        await place_instance(context, PlaceInstance(
            command_id=new_command_id(), instance_id=new_instance_id(), model_id=model_id,
            excluded_nodes=sorted(excluded_nodes)))
    except ApiError:
        if not live_excluded:
            raise
        state = context.cluster.replica.state
        recovering = [i for i in excluded_instances if i in state.instances and all(
            s.node_id in live for s in state.instances[i].shards.values())]
        if recovering:
            logger.warning("'{}' fits nowhere else; waiting for {} to restart", model_id,
                           recovering)
            excluded_instances[:] = [i for i in excluded_instances if i not in recovering]
            return
        logger.warning("'{}' fits nowhere but on {}, where it just failed; placing it there "
                       "again", model_id, sorted(live_excluded))
        await place_instance(context, PlaceInstance(
            command_id=new_command_id(), instance_id=new_instance_id(), model_id=model_id,
            excluded_nodes=sorted(excluded_nodes - live_excluded)))
