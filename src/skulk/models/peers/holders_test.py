from skulk.models.peers.holders import peers_holding
from skulk.shared.types.ids import ModelId, NodeId
from skulk.shared.types.telemetry import (
    HeldFile,
    HeldModel,
    NodeTelemetry,
    PeerReachability,
    Reachability,
    ReachableAddress,
)

TINY = HeldModel(model_id=ModelId("tiny"), format="gguf", directory="tiny-gguf",
                 files=[HeldFile(name="m.gguf", size_bytes=3, sha256="a" * 64)])
SELF = NodeId("self")


def reading(node: str, *, held: list[HeldModel], port: int | None = 9000,
            addresses: list[str] | None = None,
            edges: list[PeerReachability] | None = None) -> NodeTelemetry:
    return NodeTelemetry(
        node_id=NodeId(node), stamp=0.0, memory_total_bytes=1, memory_available_bytes=1,
        cpu_count=1, backends=[], has_worker=True, held_models=held, weights_port=port,
        reachability=Reachability(addresses=addresses or [], peers=edges or []))


def edge(node: str, *rtts: tuple[str, float]) -> PeerReachability:
    return PeerReachability(node_id=NodeId(node), observed_at=0.0, ttl_seconds=30.0,
                            addresses=[ReachableAddress(address=a, rtt_ms=r) for a, r in rtts])


def test_holders_come_nearest_first_with_the_addresses_this_node_reached_them_on() -> None:
    readings = {NodeId(r.node_id): r for r in [
        reading("self", held=[TINY], edges=[edge("far", ("10.0.0.3", 9.0)),
                                            edge("near", ("127.0.0.1", 0.1),
                                                 ("10.0.0.2", 0.5))]),
        reading("far", held=[TINY], addresses=["10.0.0.3", "127.0.0.1"]),
        reading("near", held=[TINY], addresses=["10.0.0.2", "fd00::2", "127.0.0.1"]),
        reading("unseen", held=[TINY], addresses=["10.0.0.9", "::1"]),
    ]}
    holders = peers_holding(readings, ModelId("tiny"), "gguf", SELF, secure=True)
    assert [h.node_id for h in holders] == ["near", "far", "unseen"]
    assert holders[0].base_urls == ("https://127.0.0.1:9000", "https://10.0.0.2:9000",
                                    "https://[fd00::2]:9000")
    assert holders[1].base_urls == ("https://10.0.0.3:9000",)
    assert holders[2].base_urls == ("https://10.0.0.9:9000",)
    assert holders[0].held == TINY


def test_only_peers_holding_that_model_and_format_and_serving_it_are_listed() -> None:
    mlx = TINY.model_copy(update={"format": "mlx"})
    other = TINY.model_copy(update={"model_id": ModelId("other")})
    readings = {NodeId(r.node_id): r for r in [
        reading("self", held=[TINY], addresses=["10.0.0.1"]),
        reading("mlx", held=[mlx], addresses=["10.0.0.2"]),
        reading("other", held=[other], addresses=["10.0.0.3"]),
        reading("silent", held=[TINY], port=None, addresses=["10.0.0.4"]),
        reading("unreachable", held=[TINY], addresses=["127.0.0.1"]),
        reading("holder", held=[other, TINY], addresses=["10.0.0.6"]),
    ]}
    holders = peers_holding(readings, ModelId("tiny"), "gguf", SELF, secure=False)
    assert [(h.node_id, h.base_urls) for h in holders] == [
        ("holder", ("http://10.0.0.6:9000",))]


def test_a_stage_is_served_by_a_whole_copy_or_a_stage_copy_covering_its_layers() -> None:
    whole = TINY.model_copy(update={"format": "mlx", "directory": "tiny-mlx"})
    first_half = whole.model_copy(update={"directory": "tiny-mlx-layers-0-4",
                                          "layers": (0, 4)})
    second_half = whole.model_copy(update={"directory": "tiny-mlx-layers-4-8",
                                           "layers": (4, 8)})
    readings = {NodeId(r.node_id): r for r in [
        reading("self", held=[], addresses=["10.0.0.1"]),
        reading("whole", held=[first_half, whole], addresses=["10.0.0.2"]),
        reading("first", held=[first_half], addresses=["10.0.0.3"]),
        reading("second", held=[second_half], addresses=["10.0.0.4"]),
    ]}

    def holding(layers: tuple[int, int] | None) -> list[tuple[str, str]]:
        return [(h.node_id, h.held.directory) for h in peers_holding(
            readings, ModelId("tiny"), "mlx", SELF, secure=False, layers=layers)]

    # A peer holding both copies offers its whole one.
    assert holding((0, 2)) == [("first", "tiny-mlx-layers-0-4"), ("whole", "tiny-mlx")]
    assert holding((4, 8)) == [("second", "tiny-mlx-layers-4-8"), ("whole", "tiny-mlx")]
    assert holding((2, 6)) == [("whole", "tiny-mlx")]
    assert holding(None) == [("whole", "tiny-mlx")]
