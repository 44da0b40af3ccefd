"""Placement that predicts: `prefer="speed"` takes the plan predicted fastest, a split by
heads on a fast link and one node on a slow one; previews carry the predictions."""

import pytest

from skulk.master.placement import ClusterView, PlacementError, place
from skulk.master.placement.previews import previews
from skulk.master.placement.speed import predict
from skulk.shared.types.ids import NodeId
from skulk.shared.types.model_cards import ModelCard, ModelSource
from skulk.shared.types.telemetry import (
    DecodeCalibration,
    NodeTelemetry,
    PeerReachability,
    Reachability,
    ReachableAddress,
    WidthReadRate,
)
from skulk.testing.placement import RunnerIds, command, node, smollm2

READ_RATE = 25e9  # one core's raw memory read rate on the bench machine


def llama_1b_shape() -> ModelCard:
    """Llama-3.2-1B's shape (16 layers, 2048 wide, 32 / 8 heads) in fp32 MLX weights."""
    return smollm2(gguf=False).model_copy(update={
        "n_layers": 16, "hidden_size": 2048, "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "sources": [ModelSource(format="mlx", filename="m-mlx", size_bytes=4_300_000_000)]})


def qwen_half_b_shape() -> ModelCard:
    """Qwen2.5-0.5B's layers (24, 896 wide, 14 / 2 heads) in fp32 MLX weights."""
    return smollm2(gguf=False).model_copy(update={
        "n_layers": 24, "hidden_size": 896, "num_attention_heads": 14,
        "num_key_value_heads": 2,
        "sources": [ModelSource(format="mlx", filename="m-mlx", size_bytes=1_610_000_000)]})


def pair(rtt_ms: float | None, measured: bool = True) -> dict[NodeId, NodeTelemetry]:
    """Two MLX nodes that observed each other at `rtt_ms` (None: no edge)."""
    rate = READ_RATE if measured else None
    found = {NodeId(name): node(name, backends=["mlx-cpu"]).model_copy(
        update={"memory_read_bytes_per_second": rate}) for name in ("a", "b")}
    if rtt_ms is None:
        return found
    address = {NodeId("a"): "10.0.0.1", NodeId("b"): "10.0.0.2"}
    return {name: reading.model_copy(update={"reachability": Reachability(
        addresses=[address[name]], listen_ports=[7447],
        peers=[PeerReachability(node_id=other, observed_at=0.0, ttl_seconds=1e12,
                                addresses=[ReachableAddress(address=address[other],
                                                            rtt_ms=rtt_ms)])
               for other in found if other != name])})
        for name, reading in found.items()}


def placed(rtt_ms: float | None, prefer: str, card: ModelCard | None = None
           ) -> tuple[str, int]:
    cluster = ClusterView(nodes=pair(rtt_ms), now=0.0)
    result = place(command(prefer=prefer, engine="mlx"), card or llama_1b_shape(), cluster,
                   RunnerIds())
    assert not isinstance(result, PlacementError), result
    return result.sharding, len(result.shards)


def test_speed_takes_the_heads_split_on_a_lan() -> None:
    assert placed(0.5, "speed") == ("tensor", 2)
    assert placed(0.5, "fewest_nodes") == ("pipeline", 1)


def test_speed_keeps_one_node_on_a_wifi_link() -> None:
    # 50 collectives per token at 5 ms each cost more than half the weights' reading.
    assert placed(5.0, "speed", qwen_half_b_shape()) == ("pipeline", 1)
    assert placed(0.5, "speed", qwen_half_b_shape()) == ("tensor", 2)
    # The 1B shape reads 2.7 times the bytes with a third fewer collectives: at 5 ms the
    # arithmetic still favours its split; at 20 ms it no longer does.
    assert placed(5.0, "speed") == ("tensor", 2)
    assert placed(20.0, "speed") == ("pipeline", 1)


def test_previews_carry_predictions_and_what_they_assumed() -> None:
    cluster = ClusterView(nodes=pair(None, measured=False), now=0.0)
    shown = {(p.sharding, p.width): p for p in previews(llama_1b_shape(), cluster)
             if p.engine == "mlx"}
    one, heads, layers = shown["pipeline", 1], shown["tensor", 2], shown["pipeline", 2]
    assert one.speed is not None and heads.speed is not None and layers.speed is not None
    assert heads.speed.tokens_per_second > 1.8 * one.speed.tokens_per_second
    assert layers.speed.tokens_per_second < one.speed.tokens_per_second
    assert "a's memory rate" in heads.speed.assumed
    assert "a LAN's round trip where no edge was observed" in heads.speed.assumed
    assert "predicted" in heads.speed.describe()


def calibrated(nodes: dict[NodeId, NodeTelemetry], calibration: DecodeCalibration
               ) -> dict[NodeId, NodeTelemetry]:
    return {name: reading.model_copy(update={"decode_calibration": calibration})
            for name, reading in nodes.items()}


def test_measured_decode_constants_replace_the_memory_rate() -> None:
    # MLX's one-row products read 8 GB/s at width 896 and 6 GB/s at the 1B shape's
    # 2048, and each layer costs 2 ms beyond its weights.
    calibration = DecodeCalibration(read_rates=[
        WidthReadRate(width=896, bytes_per_second=8e9),
        WidthReadRate(width=2048, bytes_per_second=6e9)], layer_seconds=0.002)
    cluster = ClusterView(nodes=calibrated(pair(0.5), calibration), now=0.0)
    shown = {(p.sharding, p.width): p for p in previews(llama_1b_shape(), cluster)
             if p.engine == "mlx"}
    one, heads = shown["pipeline", 1], shown["tensor", 2]
    assert one.plan is not None and one.speed is not None and heads.speed is not None
    assert one.speed.tokens_per_second == pytest.approx(1 / (4.3e9 / 6e9 + 16 * 0.002))
    assert "a's MLX kernels" not in heads.speed.assumed
    assert predict(llama_1b_shape(), one.plan, cluster) == one.speed


def test_unmeasured_mlx_kernels_are_said_to_be_assumed() -> None:
    cluster = ClusterView(nodes=pair(0.5), now=0.0)
    heads = next(p for p in previews(llama_1b_shape(), cluster)
                 if p.engine == "mlx" and p.sharding == "tensor")
    assert heads.speed is not None
    assert "a's MLX kernels" in heads.speed.assumed
