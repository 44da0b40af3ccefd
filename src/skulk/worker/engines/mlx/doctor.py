"""`skulk doctor`'s check of the MLX engine on this machine (its description names it)."""

import importlib.util
import sys
from pathlib import Path

from skulk.worker.engines.machine_check import MachineCheck
from skulk.worker.engines.mlx.cpu import OPENBLAS


def mlx_install(platform: str = sys.platform, openblas: Path = OPENBLAS) -> list[MachineCheck]:
    """MLX, and on Linux the OpenBLAS its runners are preloaded with."""
    if importlib.util.find_spec("mlx") is None or importlib.util.find_spec("mlx_lm") is None:
        return [MachineCheck("MLX", "WARN" if platform == "darwin" else "OK",
                             "not installed: no MLX models here",
                             "`make install`" if platform == "darwin" else "")]
    if platform == "darwin":
        return [MachineCheck("MLX", "OK", "Metal")]
    if openblas.exists():
        return [MachineCheck("MLX", "OK", f"CPU, OpenBLAS at {openblas}")]
    return [MachineCheck("MLX", "WARN",
                         "CPU with the wheel's reference BLAS: fp32 prefill ~20x slower",
                         "apt-get install libopenblas0-pthread")]
