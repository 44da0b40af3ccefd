import pytest

from skulk.fitting.speed import (
    Link,
    ModelTraffic,
    decode_tokens_per_second,
    memory_read_bytes_per_second,
    step_seconds,
)

# Qwen2.5-0.5B's layers with a 49k vocabulary in fp32 (bench/heads_split.py), read at
# the rate MLX's fp32 decode reached on one core of the bench machine.
QWEN_SHAPE = ModelTraffic(weights_bytes=1_610_000_000, n_layers=24, hidden_size=896)
LLAMA_1B_SHAPE = ModelTraffic(weights_bytes=4_300_000_000, n_layers=16, hidden_size=2048)
RATE = 7.6e9
LAN = Link(0.0005)
WIFI = Link(0.005, bytes_per_second=200e6 / 8)


def test_one_node_reads_every_weight_once_per_token() -> None:
    assert step_seconds(QWEN_SHAPE, "pipeline", [RATE], None) == pytest.approx(1.61e9 / RATE)


def test_heads_over_two_nodes_approach_twice_one_on_a_lan() -> None:
    one = decode_tokens_per_second(LLAMA_1B_SHAPE, "tensor", [RATE], None)
    heads = decode_tokens_per_second(LLAMA_1B_SHAPE, "tensor", [RATE, RATE], LAN)
    # 34 collectives of 8 KB at 0.5 ms each add 17 ms to 283 ms of reading.
    assert 1.8 < heads / one < 2.0


def test_on_a_wifi_link_the_heads_split_loses_to_one_node() -> None:
    one = decode_tokens_per_second(QWEN_SHAPE, "tensor", [RATE], None)
    assert decode_tokens_per_second(QWEN_SHAPE, "tensor", [RATE, RATE], WIFI) < one


def test_a_pipeline_never_decodes_one_stream_faster_than_one_node() -> None:
    one = decode_tokens_per_second(QWEN_SHAPE, "pipeline", [RATE], None)
    for link in (LAN, WIFI, Link(0.0)):
        assert decode_tokens_per_second(QWEN_SHAPE, "pipeline", [RATE, RATE], link) < one


def test_the_slowest_rank_of_a_heads_split_sets_its_pace() -> None:
    even = step_seconds(QWEN_SHAPE, "tensor", [RATE, RATE], Link(0.0))
    uneven = step_seconds(QWEN_SHAPE, "tensor", [RATE, RATE / 2], Link(0.0))
    assert uneven - even == pytest.approx(QWEN_SHAPE.weights_bytes / 2 / RATE, rel=1e-6)


def test_a_split_needs_its_links() -> None:
    with pytest.raises(ValueError, match="links"):
        step_seconds(QWEN_SHAPE, "tensor", [RATE, RATE], None)


def test_collectives_cost_round_trips_and_bytes_over_the_ring() -> None:
    link = Link(0.001, bytes_per_second=1e6)
    assert link.collective_seconds(1000, 2) == pytest.approx(0.001 + 0.001)
    assert link.collective_seconds(900, 3) == pytest.approx(2 * (0.001 + 0.0006))
    assert link.hop_seconds(1000) == pytest.approx(0.0005 + 0.001)


def test_the_memory_read_rate_is_measured_once() -> None:
    rate = memory_read_bytes_per_second()
    assert 1e8 < rate < 1e12  # from a slow board to a workstation
    assert memory_read_bytes_per_second() == rate
