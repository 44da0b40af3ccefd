"""The engines as placement sees them: one `EngineFit` per engine placement may choose,
in the order unpinned placements try them. The master, the worker and the API read these;
an engine's own description (`worker/engines/<engine>/description.py`) holds its fit
beside what only a runner needs (its class, options model, backend probe, environment).
"""

from collections.abc import Callable
from dataclasses import dataclass
from typing import get_args

from skulk.model_families.registry import split_refusal as mlx_split_refusal
from skulk.shared.types.instances import Sharding
from skulk.shared.types.model_cards import EngineName, ModelFormat


@dataclass(frozen=True)
class EngineFit:
    """What placement and admission know of one engine."""

    name: str
    weight_format: ModelFormat
    """The format of the weights it loads."""
    overhead_factor: float
    """Resident bytes per byte of weights on disk: weights plus scratch and slack."""
    kv_bytes_per_value: int
    """Bytes per cached key or value element."""
    default_batch: int = 1
    """Requests a runner decodes at once when its node sets no `max_batch` (its options
    model's default; admission's bound for a node that reads out nothing)."""
    shardings: frozenset[Sharding] = frozenset()
    """How one instance may be split across nodes; empty: whole on one node only."""
    split_refusal: Callable[[str, Sharding, int], str | None] | None = None
    """Why it cannot split a model of this config.json `model_type` `width` ways by a
    sharding it has, or None when it can; None here: it splits every model type alike."""
    drafts: bool = False
    """Whether it decodes speculatively, so it wants the card's drafters and a drafting
    node."""
    imports_from: ModelFormat | None = None
    """The format a missing copy of its weights is converted from on first use (MLX: the
    node's GGUF); None: it loads only its own format."""
    offloads_layers: bool = False
    """Whether it puts as many of a shard's layers as fit into a discrete GPU's memory and
    runs the rest from system memory (the master stamps how many: `gpu_layers`)."""
    head_runs_model: bool = False
    """Whether a split instance's ranks other than 0 only serve their compute device to
    rank 0 (the head), which runs the model: they take no requests and need no weights
    (llama.cpp over ggml RPC). False: every rank runs the model (MLX's ring)."""

    def runs_model(self, rank: int, world_size: int) -> bool:
        """Whether this rank runs the model (takes requests, loads weights)."""
        return rank == 0 or world_size == 1 or not self.head_runs_model

    @property
    def imports_weights(self) -> bool:
        """Whether a missing copy of its weights is converted on first use."""
        return self.imports_from is not None

    @property
    def usable_formats(self) -> frozenset[ModelFormat]:
        """The formats of a stored copy it can start from: its own, and the one it
        imports from."""
        return frozenset({self.weight_format} | ({self.imports_from} if self.imports_from
                                                  else set()))

    @property
    def splits(self) -> bool:
        """Whether one instance may span several nodes."""
        return bool(self.shardings)

    def runs_as(self, sharding: Sharding, width: int) -> bool:
        """Whether it can run an instance of this shape (whole means a one-wide pipeline)."""
        return (width == 1 and sharding == "pipeline") or sharding in self.shardings

    def shape_refusal(self, sharding: Sharding, width: int) -> str | None:
        """Why it cannot run an instance of this shape, or None when it can."""
        if self.runs_as(sharding, width):
            return None
        if not self.splits:
            return f"{self.name} runs a model whole on one node"
        return f"{self.name} does not split a model by {sharding}"


# llama.cpp maps the GGUF as it is on disk; its compute buffers and the small C++ runtime
# add about a tenth. Its KV cache is f16. Whole on one node, it offloads to a GPU the
# layers that fit in its memory; split, the head runs the model and the other ranks serve
# their device to it.
LLAMA_CPP_FIT = EngineFit(
    name="llama_cpp",
    weight_format="gguf",
    overhead_factor=1.10,
    kv_bytes_per_value=2,
    default_batch=4,
    shardings=frozenset({"pipeline"}),
    offloads_layers=True,
    head_runs_model=True,
)

# MLX holds the converted weights resident (fp32 on CPU, the only fast dtype there) and
# adds activation scratch plus its allocator's buffer cache, which grows with prompt
# length; the KV cache takes the model's dtype, fp32 for our conversions. It splits the
# model families of `skulk/model_families/`, each by the shardings its module declares.
MLX_FIT = EngineFit(
    name="mlx",
    weight_format="mlx",
    overhead_factor=1.30,
    kv_bytes_per_value=4,
    default_batch=8,
    shardings=frozenset({"pipeline", "tensor"}),
    split_refusal=mlx_split_refusal,
    drafts=True,
    imports_from="gguf",
)

# The engines placement may choose, in the order unpinned placements try them: llama.cpp
# decodes ~10x faster than MLX on CPU, so it wins whenever the model fits whole on one node.
PLACEABLE: tuple[EngineFit, ...] = (LLAMA_CPP_FIT, MLX_FIT)

_WIRE_NAMES: tuple[EngineName, ...] = get_args(EngineName)


def _wire_name(engine: EngineFit) -> EngineName:
    """The engine's name as the wire type spells it; placement stamps it on instances."""
    for name in _WIRE_NAMES:
        if name == engine.name:
            return name
    raise TypeError(f"engine {engine.name!r} is placeable but the wire type EngineName "
                    "(shared/types/model_cards.py) does not name it; add it there")


ENGINE_PREFERENCE: tuple[EngineName, ...] = tuple(_wire_name(e) for e in PLACEABLE)

_BY_NAME: dict[str, EngineFit] = {engine.name: engine for engine in PLACEABLE}


def engine_fit(name: str) -> EngineFit:
    """The placeable engine called `name`, or a ValueError listing them."""
    engine = _BY_NAME.get(name)
    if engine is None:
        raise ValueError(f"unknown engine {name!r}; placement chooses between "
                         f"{', '.join(ENGINE_PREFERENCE)}")
    return engine
