"""Making sure a model serves: find its card, place an instance when none runs, wait until
one is ready. Generations and the placement routes start here."""

import anyio

from skulk.api.context import ApiContext
from skulk.api.errors import ApiError
from skulk.api.instance_removal import placement_failed_error
from skulk.api.instance_view import has_ready_instance
from skulk.api.model_availability import unknown_model
from skulk.api.resend import resend_until
from skulk.shared.types.chunks import ErrorChunk
from skulk.shared.types.commands import PlaceInstance
from skulk.shared.types.ids import ModelId, new_command_id, new_instance_id
from skulk.shared.types.model_cards import ModelCard
from skulk.shared.types.state import State

PLACEMENT_ACK_SECONDS = 30.0


def resolve_card(context: ApiContext, model: str) -> ModelCard:
    """The card of a model named by id or alias; an unknown name is a 404 naming close
    matches and what the cluster can answer."""
    card = context.cluster.catalog.resolve(model)
    if card is None:
        raise unknown_model(context, model)
    return card


async def place_instance(context: ApiContext, command: PlaceInstance,
                         timeout: float = PLACEMENT_ACK_SECONDS) -> None:
    """Send a placement and wait until the instance exists (with `unless_served`: until
    any instance of the model does) or existed (a worker may give it up at once); a
    rejection raises."""
    def placed(state: State) -> bool:
        if command.unless_served and state.instances_of(command.model_id):
            return True
        return (command.instance_id in state.instances
                or context.cluster.replica.removed.get(command.instance_id) is not None)

    stream = context.requests.streams.open(command.command_id)
    outcome: list[ErrorChunk | None] = []
    try:
        await context.requests.commands.send(command)  # a refusal here raises as it is
        async with anyio.create_task_group() as tasks:
            async def created() -> None:
                await context.cluster.replica.wait_for(placed, timeout)
                outcome.append(None)
                tasks.cancel_scope.cancel()

            async def rejected() -> None:
                chunk = await stream.next_chunk()
                outcome.append(chunk if isinstance(chunk, ErrorChunk) else None)
                tasks.cancel_scope.cancel()

            tasks.start_soon(created)
            tasks.start_soon(rejected)
            tasks.start_soon(resend_until, context, command, placed)
    finally:
        context.requests.streams.close(command.command_id)
    if outcome and outcome[0] is not None:
        raise ApiError.from_chunk(outcome[0])
    if not placed(context.cluster.replica.state):
        raise ApiError(504, f"the master did not place {command.model_id} within {timeout:.0f} s",
                       type="server_error", code="timeout")


async def ensure_serving(context: ApiContext, model_id: ModelId) -> None:
    """Return once an instance of the model serves; place one first if allowed."""
    if has_ready_instance(context.cluster.replica.state, model_id):
        return  # as almost always: no lock to take, nothing to wait for (each a loop turn)
    removals_before = context.cluster.replica.removed.last_seq
    lock = context.requests.placement_locks.setdefault(model_id, anyio.Lock())
    async with lock:  # concurrent first requests place the model once
        if not context.cluster.replica.state.instances_of(model_id):
            if not context.settings.auto_place:
                raise ApiError(404, f"no instance of '{model_id}' is running and automatic "
                               f"placement is off; place it with POST /place_instance "
                               f"or `skulk place {model_id}`", code="model_not_found")
            await place_instance(context, PlaceInstance(
                command_id=new_command_id(), instance_id=new_instance_id(),
                model_id=model_id, unless_served=True))

    def settled(state: State) -> bool:
        return has_ready_instance(state, model_id) or not state.instances_of(model_id)

    state = await context.cluster.replica.wait_for(settled, context.settings.ready_timeout_seconds)
    if state is None:
        raise ApiError(503, f"'{model_id}' is still loading after "
                       f"{context.settings.ready_timeout_seconds:.0f} s; try again shortly",
                       type="server_error", code="model_loading")
    if not has_ready_instance(state, model_id):
        raise placement_failed_error(context, model_id, after_seq=removals_before)
