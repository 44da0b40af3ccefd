from pathlib import Path

from skulk.master.placement import PlacementError, memory_needed_bytes, place
from skulk.models.catalog import ModelCatalog
from skulk.shared.types.commands import PlaceInstance
from skulk.shared.types.ids import CommandId, InstanceId, ModelId, NodeId, RunnerId
from skulk.shared.types.instances import Instance
from skulk.shared.types.model_cards import ModelCard
from skulk.shared.types.telemetry import NodeTelemetry

GIB = 1024**3


def card() -> ModelCard:
    found = ModelCatalog.builtin(Path(".")).resolve("smollm2-135m")
    assert found is not None
    return found


def node(name: str, available: int = 8 * GIB, backends: list[str] | None = None,
         has_worker: bool = True) -> NodeTelemetry:
    return NodeTelemetry(node_id=NodeId(name), stamp=0.0, memory_total_bytes=16 * GIB,
                         memory_available_bytes=available, cpu_count=2,
                         backends=["llama_cpp-cpu"] if backends is None else backends,
                         has_worker=has_worker)


def command(**kwargs: object) -> PlaceInstance:
    return PlaceInstance(command_id=CommandId("c"), instance_id=InstanceId("i"),
                         model_id=ModelId("smollm2-135m"), **kwargs)  # type: ignore[arg-type]


def nodes(*items: NodeTelemetry) -> dict[NodeId, NodeTelemetry]:
    return {n.node_id: n for n in items}


def test_places_whole_model_on_the_roomiest_node() -> None:
    result = place(command(), card(), nodes(node("a", 2 * GIB), node("b", 6 * GIB)),
                   RunnerId("r"))
    assert isinstance(result, Instance)
    shard = result.shards[RunnerId("r")]
    assert (shard.node_id, shard.start_layer, shard.end_layer) == ("b", 0, 30)
    assert result.engine == "llama_cpp" and result.context_token_limit == 8192


def test_refusal_names_each_node_and_why() -> None:
    result = place(command(excluded_nodes=[NodeId("c")]), card(),
                   nodes(node("a", 100), node("b", backends=[]), node("c"),
                         node("d", has_worker=False)), RunnerId("r"))
    assert isinstance(result, PlacementError)
    assert "GiB available" in result.per_node[NodeId("a")]
    assert "no llama_cpp backend" in result.per_node[NodeId("b")]
    assert "excluded" in result.per_node[NodeId("c")]
    assert "no worker" in result.per_node[NodeId("d")]


def test_no_live_nodes_is_a_clear_error() -> None:
    result = place(command(), card(), {}, RunnerId("r"))
    assert isinstance(result, PlacementError) and "no worker node" in result.describe()


def test_engine_pin_without_matching_weights_is_refused() -> None:
    result = place(command(engine="mlx"), card(), nodes(node("a")), RunnerId("r"))
    assert isinstance(result, PlacementError) and "mlx" in result.message


def test_multi_node_request_is_refused_until_mlx_lands() -> None:
    result = place(command(min_nodes=2), card(), nodes(node("a"), node("b")), RunnerId("r"))
    assert isinstance(result, PlacementError) and "min_nodes" in result.message


def test_memory_needed_covers_weights_kv_and_floor() -> None:
    needed = memory_needed_bytes(card())
    assert card().storage_size * 1.25 < needed < card().storage_size * 1.25 + GIB
