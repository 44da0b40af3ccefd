from skulk.fitting.memory import (
    HOST_MEMORY,
    ShardShare,
    context_token_limit,
    host_kind,
    kv_reservation_bytes,
    shard_need_bytes,
    usable_bytes,
    whole_model,
)
from skulk.testing.placement import GGUF_BYTES, GIB, MLX_BYTES, node, smollm2


def test_need_is_weights_times_overhead_plus_kv_plus_floor() -> None:
    card = smollm2()
    cpu = node("a")
    # 2 (K and V) x 30 layers x 3 KV heads x 64 head dim x 2 bytes (f16) x 8192 tokens
    kv = 2 * 30 * 3 * 64 * 2 * 8192
    assert kv_reservation_bytes(card, "llama_cpp", whole_model(card)) == kv
    expected = -(-GGUF_BYTES * 11 // 10) + kv + HOST_MEMORY["cpu"].floor_bytes
    assert abs(shard_need_bytes(card, "llama_cpp", whole_model(card), cpu) - expected) <= 1


def test_each_engine_is_charged_its_own_weights_not_the_smallest() -> None:
    card = smollm2()
    cpu = node("a")
    llama = shard_need_bytes(card, "llama_cpp", whole_model(card), cpu)
    mlx = shard_need_bytes(card, "mlx", whole_model(card), cpu)
    # The fp32 MLX copy is ~5x the GGUF; its fp32 KV is twice the f16 one.
    assert mlx - llama > (MLX_BYTES - GGUF_BYTES)


def test_apple_unified_memory_caps_usable_at_the_gpu_working_set() -> None:
    mac = node("mac", available=15 * GIB, total=16 * GIB, backends=["mlx-metal"])
    linux = node("box", available=15 * GIB, total=16 * GIB, backends=["mlx-cpu"])
    assert host_kind(mac) == "unified" and host_kind(linux) == "cpu"
    assert usable_bytes(mac) == 12 * GIB  # 75 % of 16 GiB, though 15 GiB are free
    assert usable_bytes(linux) == 15 * GIB
    card = smollm2()
    assert (shard_need_bytes(card, "mlx", whole_model(card), mac)
            > shard_need_bytes(card, "mlx", whole_model(card), linux))  # larger floor


def test_context_ceiling_comes_from_the_card_alone() -> None:
    card = smollm2()
    assert context_token_limit(card) == context_token_limit(smollm2()) == 8192
    short = card.model_copy(update={"context_length": 2048})
    assert context_token_limit(short) == 2048
    longer = card.model_copy(update={"context_length": 131072})
    assert context_token_limit(longer) == 8192


def test_a_node_whose_sequences_keep_their_own_cells_is_charged_their_kv() -> None:
    """`llama_cpp.shared_kv=off` gives each of a runner's sequences a whole context's
    cells: the node reads out how many contexts (its batch size), placement reserves them."""
    card = smollm2()
    share = whole_model(card)
    kv = kv_reservation_bytes(card, "llama_cpp", share)
    shared = node("a")
    own_cells = shared.model_copy(update={"kv_contexts": {"llama_cpp": 4}})
    assert kv_reservation_bytes(card, "llama_cpp", share, contexts=4) == 4 * kv
    assert (shard_need_bytes(card, "llama_cpp", share, own_cells)
            - shard_need_bytes(card, "llama_cpp", share, shared)) == 3 * kv
    # Under --no-batching a whole model runs one sequence: one context.
    one_at_a_time = own_cells.model_copy(update={"batching": False})
    assert (shard_need_bytes(card, "llama_cpp", share, one_at_a_time)
            == shard_need_bytes(card, "llama_cpp", share, shared))
    # Split instances always batch: a rank's share is charged every sequence's cells.
    half = ShardShare(layers=15, weight_numerator=15, weight_denominator=30, kv_heads=3)
    assert (shard_need_bytes(card, "llama_cpp", half, one_at_a_time)
            - shard_need_bytes(card, "llama_cpp", half, shared)) == 3 * kv // 2
