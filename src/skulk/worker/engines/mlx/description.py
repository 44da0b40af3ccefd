"""The MLX engine as the rest of Skulk sees it; imports nothing of mlx."""

import importlib.util
from collections.abc import Sequence
from pathlib import Path

from skulk.fitting.engines import MLX_FIT
from skulk.models.mlx_import import ensure_mlx_model
from skulk.shared.types.telemetry import GpuDevice
from skulk.worker.engines.description import EngineDescription
from skulk.worker.engines.machine_check import MachineCheck
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


def machine_checks() -> list[MachineCheck]:
    """`skulk doctor`'s check of MLX here (installed; OpenBLAS on Linux)."""
    from skulk.worker.engines.mlx.doctor import mlx_install
    return mlx_install()


# Its fit (formats, memory, shardings by model family, drafting) is MLX_FIT. A missing
# MLX copy is imported from the node's GGUF; a pipeline rank stores only its stage.
MLX = EngineDescription(
    fit=MLX_FIT,
    engine_class="skulk.worker.engines.mlx.engine:MlxEngine",
    options=MlxOptions,
    probe_backend=probe_backend,
    runner_environment=runner_environment,
    stage_copies=True,
    import_weights=ensure_mlx_model,
    machine_checks=machine_checks,
)
