"""Dialect-neutral request handling: make sure a model serves, run one generation.

Every dialect adapter (OpenAI now; Anthropic and Ollama next) goes through here.
"""

import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass

import anyio

from skulk.api.context import ApiContext
from skulk.api.errors import ApiError
from skulk.api.instance_view import has_ready_instance
from skulk.api.streams import CommandStream
from skulk.api.tracing import RequestTrace
from skulk.shared.types.chunks import Chunk, ErrorChunk
from skulk.shared.types.commands import (
    CancelTask,
    Command,
    PlaceInstance,
    TaskFinished,
    TextGeneration,
)
from skulk.shared.types.ids import CommandId, ModelId, new_command_id, new_instance_id
from skulk.shared.types.model_cards import ModelCard
from skulk.shared.types.state import State
from skulk.shared.types.tasks import GenerationParams

PLACEMENT_ACK_SECONDS = 30.0
# Commands sent while no master listens (an election in progress) are lost: until the
# master shows it has the command, send it again this often. The master drops duplicates.
COMMAND_RESEND_SECONDS = 2.0


def resolve_card(context: ApiContext, model: str) -> ModelCard:
    card = context.catalog.resolve(model)
    if card is None:
        known = ", ".join(c.model_id for c in context.catalog.cards())
        raise ApiError(404, f"the model '{model}' does not exist; known models: {known}",
                       code="model_not_found", param="model")
    return card


async def place_instance(context: ApiContext, command: PlaceInstance,
                         timeout: float = PLACEMENT_ACK_SECONDS) -> None:
    """Send a placement and wait until the instance exists; a rejection raises."""
    stream = context.streams.open(command.command_id)
    outcome: list[ErrorChunk | None] = []
    try:
        await context.send_command(command)  # a refusal here raises as it is
        async with anyio.create_task_group() as tasks:
            async def created() -> None:
                await context.replica.wait_for(
                    lambda s: command.instance_id in s.instances, timeout)
                outcome.append(None)
                tasks.cancel_scope.cancel()

            async def rejected() -> None:
                chunk = await stream.next_chunk()
                outcome.append(chunk if isinstance(chunk, ErrorChunk) else None)
                tasks.cancel_scope.cancel()

            tasks.start_soon(created)
            tasks.start_soon(rejected)
            tasks.start_soon(_resend_until, context, command,
                             lambda s: command.instance_id in s.instances)
    finally:
        context.streams.close(command.command_id)
    if outcome and outcome[0] is not None:
        raise ApiError.from_chunk(outcome[0])
    if command.instance_id not in context.replica.state.instances:
        raise ApiError(504, f"the master did not place {command.model_id} within {timeout:.0f} s",
                       type="server_error", code="timeout")


async def ensure_serving(context: ApiContext, model_id: ModelId) -> None:
    """Return once an instance of the model serves; place one first if allowed."""
    lock = context.placement_locks.setdefault(model_id, anyio.Lock())
    async with lock:  # concurrent first requests place the model once
        if not context.replica.state.instances_of(model_id):
            if not context.auto_place:
                raise ApiError(404, f"no instance of '{model_id}' is running and automatic "
                               f"placement is off; place it with POST /place_instance "
                               f"or `skulk place {model_id}`", code="model_not_found")
            await place_instance(context, PlaceInstance(
                command_id=new_command_id(), instance_id=new_instance_id(),
                model_id=model_id))

    def settled(state: State) -> bool:
        return has_ready_instance(state, model_id) or not state.instances_of(model_id)

    state = await context.replica.wait_for(settled, context.ready_timeout_seconds)
    if state is None:
        raise ApiError(503, f"'{model_id}' is still loading after "
                       f"{context.ready_timeout_seconds:.0f} s; try again shortly",
                       type="server_error", code="model_loading")
    if not has_ready_instance(state, model_id):
        raise ApiError(503, f"the instance of '{model_id}' failed to start; see the node's "
                       "log, then place it again", type="server_error", code="runner_failed")


@dataclass
class Generation:
    """One running generation: its stream and the first chunk, already received."""

    command_id: CommandId
    stream: CommandStream
    first: Chunk
    created: int
    done: bool = False
    trace: RequestTrace | None = None

    async def chunks(self) -> AsyncIterator[Chunk]:
        yield self.first
        async for chunk in self.stream:
            yield chunk


async def start_generation(context: ApiContext, params: GenerationParams) -> Generation:
    """Register the stream, send the command, and wait for the first chunk.

    An error as the first chunk raises, so the client gets a real HTTP error status even
    when it asked for a stream.
    """
    command_id = new_command_id()
    stream = context.streams.open(command_id)  # before the command: no chunk is missed
    generation = Generation(command_id, stream, ErrorChunk(error_kind="internal", message=""),
                            int(time.time()))
    command = TextGeneration(command_id=command_id, owner_node=context.node_id, params=params)
    try:
        await context.send_command(command)  # a refusal here raises as it is
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(_resend_until, context, command,
                             lambda s: s.task_for_command(command_id) is not None)
            generation.first = await stream.next_chunk()
            tasks.cancel_scope.cancel()
    except BaseException:
        await finish_generation(context, generation)
        raise
    if isinstance(generation.first, ErrorChunk):
        generation.done = True
        await finish_generation(context, generation)
        raise ApiError.from_chunk(generation.first)
    return generation


async def _resend_until(context: ApiContext, command: Command,
                        acknowledged: Callable[[State], bool]) -> None:
    """Resend a sent command until the replicated State shows the master acted on it."""
    while True:
        await anyio.sleep(COMMAND_RESEND_SECONDS)
        if acknowledged(context.replica.state):
            return
        await context.send_command(command)


async def finish_generation(context: ApiContext, generation: Generation) -> None:
    """Always called: cancels an unfinished generation, then lets the master forget it."""
    with anyio.CancelScope(shield=True):
        if generation.trace is not None:
            generation.trace.end("abandoned")  # unless its final chunk ended it already
        context.streams.close(generation.command_id)
        if not generation.done and not generation.stream.finished:
            await context.send_command(CancelTask(command_id=new_command_id(),
                                                  target_command_id=generation.command_id))
        await context.send_command(TaskFinished(command_id=new_command_id(),
                                                target_command_id=generation.command_id))
