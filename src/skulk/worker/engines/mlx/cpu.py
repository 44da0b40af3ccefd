"""CPU tuning of MLX runners on Linux, decided by the engine rather than by the user.

The `mlx[cpu]` wheel carries the reference BLAS; Debian's OpenBLAS makes fp32 matmuls
roughly 20x faster for prefill and 1.5x for decode (ENGINE-NOTES). It has to be preloaded
into the runner before the process starts, so the supervisor asks for the runner's
environment here. Nothing in this module imports mlx: the node process calls it.
"""

import ctypes
import os
import sys
from pathlib import Path

from loguru import logger

from skulk.worker.engines.mlx.options import MlxOptions
from skulk.worker.engines.protocol import EngineConfig

OPENBLAS = Path("/usr/lib/x86_64-linux-gnu/openblas-pthread/libblas.so.3")
_absence_logged = False


def runner_environment(config: EngineConfig, openblas: Path = OPENBLAS) -> dict[str, str]:
    """Variables to add to an MLX runner's environment: OpenBLAS preloaded when present,
    and its thread count pinned to the configured number of threads."""
    global _absence_logged
    environment: dict[str, str] = {}
    if MlxOptions.of(config.options).openblas == "off":
        return environment
    if sys.platform.startswith("linux") and openblas.exists():
        preload = [p for p in os.environ.get("LD_PRELOAD", "").split(":") if p]
        environment["LD_PRELOAD"] = ":".join([*preload, str(openblas)])
    elif not _absence_logged:
        _absence_logged = True
        logger.info("OpenBLAS not found at {}: MLX runners use the wheel's reference BLAS, "
                    "fp32 will be slow (apt-get install libopenblas0-pthread)", openblas)
    if config.n_threads:
        environment["OPENBLAS_NUM_THREADS"] = str(config.n_threads)
        environment["OMP_NUM_THREADS"] = str(config.n_threads)
    return environment


def openblas_loaded(openblas: Path = OPENBLAS) -> bool:
    """Whether this process has Debian's OpenBLAS mapped (it was preloaded). numpy's own
    bundled OpenBLAS does not count: MLX does not call it."""
    try:
        maps = Path("/proc/self/maps").read_text()
        return openblas.exists() and str(openblas.resolve().parent) in maps
    except OSError:
        return False


def set_blas_threads(n_threads: int | None) -> None:
    """Honour the configured thread count in a running process, when OpenBLAS is there."""
    if not n_threads:
        return
    try:
        setter = ctypes.CDLL(None).openblas_set_num_threads
    except (OSError, AttributeError):
        return  # the reference BLAS is single-threaded: nothing to set
    setter(ctypes.c_int(n_threads))
