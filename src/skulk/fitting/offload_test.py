"""GPU offload arithmetic: layers to a discrete GPU's free memory, the rest to system
memory; nothing changes on nodes without a GPU or for engines that do not offload."""

from math import ceil

from skulk.fitting.memory import (
    HOST_MEMORY,
    MIB,
    kv_reservation_bytes,
    shard_need_bytes,
    whole_model,
)
from skulk.fitting.offload import (
    GPU_RESERVE_BYTES,
    capacity_bytes,
    offload_gpus,
    shard_need,
)
from skulk.master.placement.plans import Plan, plan_for
from skulk.shared.types.model_cards import ModelCard
from skulk.shared.types.telemetry import GpuDevice, NodeTelemetry
from skulk.testing.placement import GIB, cuda_node, gguf_card, node, smollm2

FLOOR = HOST_MEMORY["cpu"].floor_bytes


def test_a_4_gib_gpu_takes_the_layers_of_an_8_gib_model_its_free_memory_holds() -> None:
    card = gguf_card(8 * GIB)
    share = whole_model(card)
    weights = ceil(8 * GIB * 1.10)
    kv = kv_reservation_bytes(card, "llama_cpp", share)  # 32 MiB a layer: 8 KV heads x 128
    per_layer = ceil(weights / 32) + ceil(kv / 32)  # ~314 MiB
    expected = (4 * GIB - GPU_RESERVE_BYTES - 1) // per_layer
    need = shard_need(card, "llama_cpp", share, cuda_node("gpu", vram_free=4 * GIB))
    assert need.gpu_layers == expected == 9
    offloaded = ceil(weights * 9 / 32) + kv * 9 // 32
    assert need.vram_bytes == offloaded + GPU_RESERVE_BYTES < need.vram_usable_bytes == 4 * GIB
    assert need.system_bytes == weights + kv + FLOOR - offloaded
    assert need.admitted_by(8 * GIB)


def test_a_model_smaller_than_the_gpu_goes_there_whole() -> None:
    card = gguf_card(4 * GIB)
    need = shard_need(card, "llama_cpp", whole_model(card), cuda_node("gpu", 24 * GIB))
    assert need.gpu_layers == 32
    assert need.system_bytes == FLOOR  # only the runner itself stays in system memory


def test_a_node_without_gpu_needs_what_it_always_did() -> None:
    card = smollm2()
    cpu = node("cpu")
    need = shard_need(card, "llama_cpp", whole_model(card), cpu)
    assert need.gpu_layers == need.vram_bytes == need.vram_usable_bytes == 0
    assert need.system_bytes == shard_need_bytes(card, "llama_cpp", whole_model(card), cpu)
    [rank] = _whole(card, cpu).ranks
    assert (rank.gpu_layers, rank.vram_needed_bytes, rank.vram_usable_bytes) == (0, 0, 0)


def test_no_offload_without_a_gpu_build_a_full_gpu_or_an_offloading_engine() -> None:
    card = gguf_card(8 * GIB)
    cuda = cuda_node("gpu", vram_free=8 * GIB)
    cpu_build = cuda.model_copy(update={"backends": ["llama_cpp-cpu", "mlx-cpu"]})
    full = cuda_node("full", vram_free=GPU_RESERVE_BYTES + 100 * MIB)
    assert offload_gpus(cuda, "llama_cpp") == cuda.gpus
    assert offload_gpus(cpu_build, "llama_cpp") == []
    assert offload_gpus(cuda, "mlx") == []  # MLX runs on the CPU here
    assert shard_need(card, "llama_cpp", whole_model(card), full).gpu_layers == 0
    assert capacity_bytes(cpu_build, "llama_cpp") == capacity_bytes(node("x"), "llama_cpp")


def test_each_gpu_holds_whole_layers_after_its_own_reserve() -> None:
    card = gguf_card(8 * GIB)
    one = shard_need(card, "llama_cpp", whole_model(card), cuda_node("a", 4 * GIB))
    two_gpus = cuda_node("b", 4 * GIB)
    two_gpus = two_gpus.model_copy(update={"gpus": [*two_gpus.gpus, *two_gpus.gpus]})
    two = shard_need(card, "llama_cpp", whole_model(card), two_gpus)
    assert two.gpu_layers == 2 * one.gpu_layers
    assert two.vram_usable_bytes == 8 * GIB and two.admitted_by(8 * GIB)


def test_apple_silicon_offloads_everything_and_counts_it_in_unified_memory() -> None:
    card = gguf_card(4 * GIB)
    metal = GpuDevice(name="Apple M2", backend="metal", vram_total_bytes=12 * GIB,
                      vram_free_bytes=12 * GIB)
    mac = node("mac", 15 * GIB, total=16 * GIB, backends=["llama_cpp-metal"], gpus=[metal])
    need = shard_need(card, "llama_cpp", whole_model(card), mac)
    assert need.gpu_layers == 32 and need.vram_bytes == 0
    assert need.system_bytes == shard_need_bytes(card, "llama_cpp", whole_model(card), mac)
    assert capacity_bytes(mac, "llama_cpp") == 12 * GIB  # the working set, not RAM + GPU


def test_a_stamped_count_is_judged_against_the_gpu_now() -> None:
    card = gguf_card(8 * GIB)
    share = whole_model(card)
    planned = shard_need(card, "llama_cpp", share, cuda_node("gpu", 4 * GIB))
    again = shard_need(card, "llama_cpp", share, cuda_node("gpu", 4 * GIB),
                       gpu_layers=planned.gpu_layers)
    assert again == planned
    shrunk = shard_need(card, "llama_cpp", share, cuda_node("gpu", 2 * GIB),
                        gpu_layers=planned.gpu_layers)
    assert not shrunk.admitted_by(64 * GIB)
    none = shard_need(card, "llama_cpp", share, cuda_node("gpu", 4 * GIB), gpu_layers=0)
    assert none.gpu_layers == 0 and none.system_bytes == planned.system_bytes + (
        planned.vram_bytes - GPU_RESERVE_BYTES)


def test_a_gpu_lets_a_node_hold_a_model_its_memory_alone_cannot() -> None:
    card = gguf_card(8 * GIB)
    assert not _whole(card, node("cpu", 8 * GIB)).fits  # it needs ~10.3 GiB
    [rank] = _whole(card, cuda_node("gpu", vram_free=4 * GIB, available=8 * GIB)).ranks
    assert rank.fits and rank.gpu_layers == 9 and rank.needed_bytes < 8 * GIB


def _whole(card: ModelCard, on: NodeTelemetry) -> Plan:
    plan = plan_for(card, "llama_cpp", "pipeline", [on])
    assert isinstance(plan, Plan), plan
    return plan
