"""Builders of cards, nodes and commands for placement tests."""

from skulk.shared.types.commands import PlaceInstance
from skulk.shared.types.ids import ModelId, NodeId, RunnerId
from skulk.shared.types.model_cards import ModelCard, ModelSource
from skulk.shared.types.telemetry import (
    GpuDevice,
    NodeTelemetry,
    PeerReachability,
    Reachability,
    ReachableAddress,
)

GIB = 1024**3
GGUF_BYTES = 98_362_432  # the SmolLM2 Q4_1 GGUF
MLX_BYTES = 538_000_000  # its fp32 MLX conversion, roughly
CPU_BACKENDS = ["llama_cpp-cpu", "mlx-cpu"]


def smollm2(*, gguf: bool = True, mlx: bool = True) -> ModelCard:
    """SmolLM2-135M's shape (30 layers, 576 wide, 9 query / 3 KV heads), both formats."""
    sources = []
    if gguf:
        sources.append(ModelSource(format="gguf", filename="m.gguf", size_bytes=GGUF_BYTES))
    if mlx:
        sources.append(ModelSource(format="mlx", filename="m-mlx", size_bytes=MLX_BYTES))
    return ModelCard(model_id=ModelId("smollm2-135m"), aliases=["SmolLM2-135M-Instruct"],
                     family="llama", n_layers=30,
                     hidden_size=576, num_attention_heads=9, num_key_value_heads=3,
                     context_length=8192, capabilities=["text", "chat"], sources=sources,
                     chat_template_source="gguf")


def node(name: str, available: int = 8 * GIB, backends: list[str] | None = None,
         has_worker: bool = True, total: int = 16 * GIB,
         gpus: list[GpuDevice] | None = None) -> NodeTelemetry:
    return NodeTelemetry(node_id=NodeId(name), stamp=0.0, memory_total_bytes=total,
                         memory_available_bytes=available, cpu_count=2,
                         backends=CPU_BACKENDS if backends is None else backends,
                         has_worker=has_worker, gpus=gpus or [])


def cuda_node(name: str, vram_free: int, available: int = 8 * GIB) -> NodeTelemetry:
    """A Linux node with one NVIDIA GPU of `vram_free` free bytes and a CUDA llama.cpp."""
    gpu = GpuDevice(name="NVIDIA test GPU", backend="cuda", vram_total_bytes=vram_free,
                    vram_free_bytes=vram_free)
    return node(name, available, backends=["llama_cpp-cuda", "mlx-cpu"], gpus=[gpu])


def gguf_card(size_bytes: int, n_layers: int = 32) -> ModelCard:
    """A Llama-3-8B-shaped card (4096 wide, 32 query / 8 KV heads) with GGUF weights only."""
    return ModelCard(model_id=ModelId("big"), family="llama", n_layers=n_layers,
                     hidden_size=4096, num_attention_heads=32, num_key_value_heads=8,
                     context_length=8192, capabilities=["text"],
                     sources=[ModelSource(format="gguf", filename="big.gguf",
                                          size_bytes=size_bytes)],
                     chat_template_source="gguf")


def nodes(*items: NodeTelemetry, connected: bool = True) -> dict[NodeId, NodeTelemetry]:
    """The nodes by id; `connected` gives every pair an observed edge on 10.0.0.x."""
    by_id = {n.node_id: n for n in items}
    if not connected:
        return by_id
    address = {node_id: f"10.0.0.{index + 1}" for index, node_id in enumerate(by_id)}
    return {node_id: node.model_copy(update={"reachability": Reachability(
        addresses=[address[node_id]], listen_ports=[7447],
        peers=[PeerReachability(node_id=peer, observed_at=0.0, ttl_seconds=1e12,
                                addresses=[ReachableAddress(address=address[peer],
                                                            rtt_ms=0.2)])
               for peer in by_id if peer != node_id])})
            for node_id, node in by_id.items()}


def command(**fields: object) -> PlaceInstance:
    base: dict[str, object] = {"command_id": "c", "instance_id": "i", "model_id": "smollm2-135m"}
    return PlaceInstance.model_validate(base | fields)


class RunnerIds:
    """Deterministic runner ids: run-0, run-1, ..."""

    def __init__(self) -> None:
        self._next = 0

    def __call__(self) -> RunnerId:
        self._next += 1
        return RunnerId(f"run-{self._next - 1}")

