"""The MLX engine as the rest of Skulk sees it; imports nothing of mlx."""

import importlib.util
from collections.abc import Sequence
from pathlib import Path

from skulk.model_families.registry import split_refusal
from skulk.shared.types.telemetry import GpuDevice
from skulk.worker.engines.description import EngineDescription
from skulk.worker.engines.mlx.cpu import runner_environment
from skulk.worker.engines.mlx.options import MlxOptions


def probe_backend(platform: str, _gpus: Sequence[GpuDevice]) -> str | None:
    """`mlx-metal` on a Mac, `mlx-cpu` elsewhere, when MLX and mlx-lm are installed
    (found, not imported: MLX costs memory and threads in the node process)."""
    if not _mlx_installed(platform) or importlib.util.find_spec("mlx_lm") is None:
        return None
    return "mlx-metal" if platform == "darwin" else "mlx-cpu"


def _mlx_installed(platform: str) -> bool:
    """MLX's compiled core is present; on Linux, also the CPU backend library, which comes
    from the separate `mlx-cpu` wheel (`mlx[cpu]`) that the `mlx` wheel alone lacks."""
    spec = importlib.util.find_spec("mlx")
    folders = [Path(p) for p in (spec.submodule_search_locations or [])] if spec else []
    has_core = any(any(f.glob("core.*")) for f in folders)
    if platform != "linux":
        return has_core
    return has_core and any(any((f / "lib").glob("libmlx.so*")) for f in folders)


# MLX holds the converted weights resident (fp32 on CPU, the only fast dtype there) and
# adds activation scratch plus its allocator's buffer cache, which grows with prompt
# length; the KV cache takes the model's dtype, fp32 for our conversions.
MLX = EngineDescription(
    name="mlx",
    engine_class="skulk.worker.engines.mlx.engine:MlxEngine",
    options=MlxOptions,
    weight_format="mlx",
    overhead_factor=1.30,
    kv_bytes_per_value=4,
    probe_backend=probe_backend,
    shardings=frozenset({"pipeline", "tensor"}),
    split_refusal=split_refusal,
    runner_environment=runner_environment,
    drafts=True,
    imports_weights=True,
)
