"""The engines placement can choose between, and which nodes can run each one."""

from collections.abc import Mapping
from dataclasses import dataclass

from skulk.shared.types.model_cards import EngineName, ModelCard, ModelFormat, ModelSource
from skulk.shared.types.telemetry import NodeTelemetry


@dataclass(frozen=True)
class EngineTraits:
    """What placement must know about one engine: its weights, reach and memory habits."""

    format: ModelFormat
    # Whether one instance may span several nodes (pipeline or tensor over the ring).
    splits: bool
    # Resident bytes per byte of weights on disk: weights plus scratch and allocator slack.
    overhead_factor: float
    # Bytes per cached key or value element.
    kv_bytes_per_value: int


ENGINES: Mapping[EngineName, EngineTraits] = {
    # llama.cpp maps the GGUF as it is on disk; its compute buffers and the small C++
    # runtime add about a tenth. Its KV cache is f16. It runs a model whole on one node.
    "llama_cpp": EngineTraits(format="gguf", splits=False, overhead_factor=1.10,
                              kv_bytes_per_value=2),
    # MLX holds the converted weights resident (fp32 on CPU, the only fast dtype there) and
    # adds activation scratch plus its allocator's buffer cache, which grows with prompt
    # length; the KV cache takes the model's dtype, fp32 for our conversions.
    "mlx": EngineTraits(format="mlx", splits=True, overhead_factor=1.30,
                        kv_bytes_per_value=4),
}

# Unpinned placements try engines in this order: llama.cpp decodes ~10x faster than MLX
# on CPU, so it wins whenever the model fits whole on one node.
ENGINE_PREFERENCE: tuple[EngineName, ...] = ("llama_cpp", "mlx")


def source_for_engine(card: ModelCard, engine: EngineName) -> ModelSource | None:
    """The card's weights in the format `engine` loads, if the card has them."""
    return card.source_for(ENGINES[engine].format)


def engines_of(card: ModelCard) -> list[EngineName]:
    """Engines the card has weights for, in preference order."""
    return [e for e in ENGINE_PREFERENCE if source_for_engine(card, e) is not None]


def runs_engine(node: NodeTelemetry, engine: EngineName) -> bool:
    """A node runs an engine when it advertises a backend tag `<engine>-<compute>`."""
    return any(tag.split("-", 1)[0] == engine for tag in node.backends)
