import pytest

from skulk.fitting.speed import (
    Link,
    ModelTraffic,
    RankSpeed,
    decode_read_rate,
    decode_tokens_per_second,
    memory_read_bytes_per_second,
    rate_at_width,
    step_seconds,
)

# Qwen2.5-0.5B's layers with a 49k vocabulary in fp32 (bench/heads_split.py), read at
# the rate MLX's fp32 decode reached on one core of the bench machine.
QWEN_SHAPE = ModelTraffic(weights_bytes=1_610_000_000, n_layers=24, hidden_size=896)
LLAMA_1B_SHAPE = ModelTraffic(weights_bytes=4_300_000_000, n_layers=16, hidden_size=2048)
RATE = 7.6e9
ONE = [RankSpeed(RATE)]
TWO = [RankSpeed(RATE), RankSpeed(RATE)]
LAN = Link(0.0005)
WIFI = Link(0.005, bytes_per_second=200e6 / 8)


def test_one_node_reads_every_weight_once_per_token() -> None:
    assert step_seconds(QWEN_SHAPE, "pipeline", ONE, None) == pytest.approx(1.61e9 / RATE)


def test_heads_over_two_nodes_approach_twice_one_on_a_lan() -> None:
    one = decode_tokens_per_second(LLAMA_1B_SHAPE, "tensor", ONE, None)
    heads = decode_tokens_per_second(LLAMA_1B_SHAPE, "tensor", TWO, LAN)
    # 34 collectives of 8 KB at 0.5 ms each add 17 ms to 283 ms of reading.
    assert 1.8 < heads / one < 2.0


def test_on_a_wifi_link_the_heads_split_loses_to_one_node() -> None:
    one = decode_tokens_per_second(QWEN_SHAPE, "tensor", ONE, None)
    assert decode_tokens_per_second(QWEN_SHAPE, "tensor", TWO, WIFI) < one


def test_a_pipeline_never_decodes_one_stream_faster_than_one_node() -> None:
    one = decode_tokens_per_second(QWEN_SHAPE, "pipeline", ONE, None)
    for link in (LAN, WIFI, Link(0.0)):
        assert decode_tokens_per_second(QWEN_SHAPE, "pipeline", TWO, link) < one


def test_the_slowest_rank_of_a_heads_split_sets_its_pace() -> None:
    even = step_seconds(QWEN_SHAPE, "tensor", TWO, Link(0.0))
    uneven = step_seconds(QWEN_SHAPE, "tensor", [RankSpeed(RATE), RankSpeed(RATE / 2)],
                          Link(0.0))
    assert uneven - even == pytest.approx(QWEN_SHAPE.weights_bytes / 2 / RATE, rel=1e-6)


def test_a_split_needs_its_links() -> None:
    with pytest.raises(ValueError, match="links"):
        step_seconds(QWEN_SHAPE, "tensor", TWO, None)


def test_every_rank_runs_every_layer_of_a_heads_split_and_its_own_of_a_pipeline() -> None:
    layer, free = 0.001, Link(0.0, bytes_per_second=float("inf"))
    slow = [RankSpeed(RATE, layer)] * 2
    heads = step_seconds(QWEN_SHAPE, "tensor", slow, free)
    layers = step_seconds(QWEN_SHAPE, "pipeline", slow, free)
    # The heads split halves the bytes, not the 24 layers' fixed costs; the pipeline's
    # ranks run 12 layers each, one after the other.
    assert heads == pytest.approx(QWEN_SHAPE.weights_bytes / 2 / RATE + 24 * layer)
    assert layers == pytest.approx(QWEN_SHAPE.weights_bytes / RATE + 24 * layer)
    assert step_seconds(QWEN_SHAPE, "tensor", [RankSpeed(RATE, layer)], None) == \
        pytest.approx(QWEN_SHAPE.weights_bytes / RATE + 24 * layer)


def test_fixed_costs_per_layer_shrink_what_a_heads_split_gains() -> None:
    lean = (decode_tokens_per_second(QWEN_SHAPE, "tensor", TWO, LAN)
            / decode_tokens_per_second(QWEN_SHAPE, "tensor", ONE, None))
    costly = [RankSpeed(RATE, 0.002)]
    heavy = (decode_tokens_per_second(QWEN_SHAPE, "tensor", costly * 2, LAN)
             / decode_tokens_per_second(QWEN_SHAPE, "tensor", costly, None))
    assert heavy < lean


def test_the_read_rate_at_a_width_is_its_own_or_a_like_widths() -> None:
    # As measured on the bench machine's core: rows of 1024 and 2048 read slower than
    # rows of 896 or 960 (their length, a multiple of a large power of two, collides in
    # the caches).
    rates = {896: 8.7e9, 960: 9.4e9, 1024: 5.2e9, 1536: 6.4e9, 2048: 4.8e9, 4096: 4.5e9}
    assert rate_at_width(rates, 2048) == 4.8e9
    assert rate_at_width(rates, 8192) == 4.5e9  # aligned like 4096, the nearest of those
    assert rate_at_width(rates, 3072) == 4.5e9  # 3 x 1024: aligned like 4096, nearer
    assert rate_at_width(rates, 1152) == 8.7e9  # 9 x 128, like 896 (7 x 128)
    assert rate_at_width({1024: 5.2e9}, 896) == 5.2e9  # none alike: the nearest
    with pytest.raises(ValueError, match="no measured rates"):
        rate_at_width({}, 2048)


def test_a_decode_reads_the_down_projection_at_the_mlps_width() -> None:
    # 896-wide rows at 6 GB/s, the 3,584-wide rows of the MLP's down projection at 12:
    # three quarters of the bytes at 6 and a quarter at 12 take 7/8 of all of them at 6.
    rates = {896: 6e9, 3584: 12e9}
    assert decode_read_rate(rates, 896) == pytest.approx(6e9 * 8 / 7)
    assert decode_read_rate({2048: 5e9}, 2048) == pytest.approx(5e9)


def test_collectives_cost_round_trips_and_bytes_over_the_ring() -> None:
    link = Link(0.001, bytes_per_second=1e6)
    assert link.collective_seconds(1000, 2) == pytest.approx(0.001 + 0.001)
    assert link.collective_seconds(900, 3) == pytest.approx(2 * (0.001 + 0.0006))
    assert link.hop_seconds(1000) == pytest.approx(0.0005 + 0.001)


def test_the_memory_read_rate_is_measured_once() -> None:
    rate = memory_read_bytes_per_second()
    assert 1e8 < rate < 1e12  # from a slow board to a workstation
    assert memory_read_bytes_per_second() == rate
