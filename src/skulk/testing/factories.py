"""Small builders of valid wire values for tests."""

from skulk.shared.types.chunks import ErrorChunk, TokenChunk, Usage
from skulk.shared.types.events import (
    CommandRejected,
    Event,
    InstanceCreated,
    InstanceDeleted,
    MembershipAgreed,
    ModelCardAdded,
    ModelCardRemoved,
    NodeFailureNoted,
    NodeRevoked,
    RunnerStatusUpdated,
    StateSnapshotHydrated,
    TaskCreated,
    TaskDeleted,
    TaskStatusUpdated,
    WeightsFetchProgress,
    WeightsReady,
)
from skulk.shared.types.ids import CommandId, InstanceId, ModelId, NodeId, RunnerId, TaskId
from skulk.shared.types.instances import Instance, ShardAssignment
from skulk.shared.types.model_cards import ModelCard, ModelSource
from skulk.shared.types.runners import RunnerFailed, RunnerReady
from skulk.shared.types.state import State
from skulk.shared.types.tasks import ChatMessage, GenerationParams, TextGenerationTask

NODE = NodeId("node-a")
MODEL = ModelId("smollm2-135m")


def instance(
    instance_id: str = "inst-1", runner_id: str = "run-1", node: NodeId = NODE
) -> Instance:
    return Instance(
        instance_id=InstanceId(instance_id),
        model_id=MODEL,
        engine="llama_cpp",
        sharding="pipeline",
        shards={
            RunnerId(runner_id): ShardAssignment(
                node_id=node, rank=0, world_size=1, start_layer=0, end_layer=30
            )
        },
        context_token_limit=2048,
    )


def added_card(model_id: str = "tiny-added", n_layers: int = 2,
               filename: str = "tiny-added-gguf/tiny.gguf") -> ModelCard:
    """A card as `skulk models add` derives it, for a model no built-in card names."""
    return ModelCard(
        model_id=ModelId(model_id), family="llama", n_layers=n_layers, hidden_size=64,
        num_attention_heads=4, num_key_value_heads=2, context_length=256,
        capabilities=["text", "chat"], chat_template_source="gguf",
        sources=[ModelSource(format="gguf", filename=filename, size_bytes=1000)])


def params(text: str = "hello") -> GenerationParams:
    return GenerationParams(
        model_id=MODEL, messages=[ChatMessage(role="user", content=text)], max_tokens=8
    )


def task(
    task_id: str = "task-1", instance_id: str = "inst-1", command_id: str = "cmd-1"
) -> TextGenerationTask:
    return TextGenerationTask(
        task_id=TaskId(task_id),
        command_id=CommandId(command_id),
        instance_id=InstanceId(instance_id),
        owner_node=NODE,
        params=params(),
    )


def state_with(*events: Event, start: State | None = None) -> State:
    """`start` (or an empty State) with `events` applied in order, as a master would."""
    from skulk.shared.apply import apply
    from skulk.shared.types.events import IndexedEvent
    from skulk.shared.types.ids import SessionId

    state = start or State()
    for event in events:
        state = apply(state, IndexedEvent(index=state.last_event_applied_idx + 1,
                                          session=SessionId("s"), master_node=NODE,
                                          event=event))
    return state


def one_of_each_event() -> list[Event]:
    """One event of every type, in an order that applies cleanly from an empty State."""
    return [
        InstanceCreated(instance=instance()),
        WeightsFetchProgress(runner_id=RunnerId("run-1"), model_id=MODEL, done_bytes=10,
                             total_bytes=100, source="peer node-b"),
        WeightsReady(runner_id=RunnerId("run-1"), model_id=MODEL, total_bytes=100,
                     files_sha256="0" * 64, source="peer node-b"),
        RunnerStatusUpdated(runner_id=RunnerId("run-1"), status=RunnerReady()),
        TaskCreated(task=task()),
        ModelCardAdded(card=added_card(), node_id=NODE),
        ModelCardRemoved(model_id=ModelId("tiny-added"), node_id=NODE),
        TaskStatusUpdated(task_id=TaskId("task-1"), status="running"),
        CommandRejected(
            command_id=CommandId("cmd-x"), error_kind="invalid_request", message="no"
        ),
        TaskDeleted(task_id=TaskId("task-1")),
        RunnerStatusUpdated(runner_id=RunnerId("run-1"), status=RunnerFailed(error="boom")),
        InstanceDeleted(instance_id=InstanceId("inst-1"), reason="test"),
        StateSnapshotHydrated(state=State(instances={InstanceId("inst-1"): instance()})),
        NodeRevoked(node_id=NodeId("node-x")),
        MembershipAgreed(members=[NodeId("node-a"), NodeId("node-b")]),
        NodeFailureNoted(node_id=NodeId("node-a"), reason="runner hung", until=100.0),
    ]


def chunks() -> list[TokenChunk | ErrorChunk]:
    return [
        TokenChunk(text="Hi"),
        TokenChunk(
            text="", finish_reason="stop", usage=Usage(prompt_tokens=3, completion_tokens=1)
        ),
        ErrorChunk(error_kind="runner_failed", message="runner died"),
    ]
