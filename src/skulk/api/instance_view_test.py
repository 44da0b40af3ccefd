"""The instance views keep the JSON the dashboard and `skulk status` read."""

from skulk.api.instance_view import instance_body, instance_view
from skulk.shared.types.ids import InstanceId, ModelId, NodeId, RunnerId
from skulk.shared.types.instances import Instance, ShardAssignment
from skulk.shared.types.runners import RunnerFetching, RunnerReady
from skulk.shared.types.state import State

RANK_FIELDS = {"runner_id", "node_id", "rank", "world_size", "start_layer", "end_layer",
               "runner_status", "fetch", "gpu_layers", "error"}


def split_instance() -> Instance:
    shards = {RunnerId("r1"): ShardAssignment(node_id=NodeId("b"), rank=1, world_size=2,
                                              start_layer=10, end_layer=30,
                                              ring_host="10.0.0.2"),
              RunnerId("r0"): ShardAssignment(node_id=NodeId("a"), rank=0, world_size=2,
                                              start_layer=0, end_layer=10)}
    return Instance(instance_id=InstanceId("i"), model_id=ModelId("m"), engine="mlx",
                    sharding="pipeline", shards=shards, context_token_limit=4096,
                    ring_port=5000, drafter_node=NodeId("c"), replaced=1)


def test_the_instance_route_shows_ranks_in_order_with_their_runner_status() -> None:
    state = State(runners={RunnerId("r0"): RunnerReady()})
    shown = instance_view(state, split_instance()).model_dump(mode="json")
    assert set(shown) == {"instance_id", "model_id", "engine", "sharding", "status",
                          "context_token_limit", "ring_port", "pinned", "ranks"}
    assert shown["status"] == "loading" and shown["ring_port"] == 5000
    assert [set(rank) for rank in shown["ranks"]] == [RANK_FIELDS | {"ring_host"}] * 2
    assert [(r["runner_id"], r["runner_status"], r["ring_host"]) for r in shown["ranks"]] == [
        ("r0", "ready", None), ("r1", "pending", "10.0.0.2")]


def test_the_cluster_summary_shows_the_drafter_and_no_ring_addresses() -> None:
    body = instance_body(State(), split_instance())
    assert set(body) == {"instance_id", "model_id", "engine", "sharding", "status",
                         "context_token_limit", "drafter_node", "pinned", "ranks"}
    assert body["drafter_node"] == "c" and body["status"] == "pending"
    assert isinstance(body["ranks"], list)
    assert [set(rank) for rank in body["ranks"]] == [RANK_FIELDS] * 2


def test_a_rank_whose_weights_are_being_fetched_shows_how_far() -> None:
    fetching = RunnerFetching(done_bytes=30, total_bytes=120, source="peer a")
    state = State(runners={RunnerId("r1"): fetching})
    shown = instance_view(state, split_instance()).model_dump(mode="json")
    assert shown["status"] == "loading"
    assert [(r["runner_status"], r["fetch"]) for r in shown["ranks"]] == [
        ("pending", None),
        ("fetching", {"kind": "fetching", "done_bytes": 30, "total_bytes": 120,
                      "source": "peer a"})]
