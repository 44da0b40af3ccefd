"""This node's decode constants: `skulk.fitting.decode_probe` run once, in a process with
an MLX runner's environment (OpenBLAS preloaded, one thread), soon after the node starts.

The constants are the machine's, not the node's: the first node to measure them on a
machine since it booted keeps them in a file that the next nodes started there read
instead of measuring again (a test suite starts hundreds).
"""

import hashlib
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import anyio
from loguru import logger
from pydantic import ValidationError

from skulk.shared.types.telemetry import DecodeCalibration
from skulk.worker.engines.mlx.cpu import runner_environment
from skulk.worker.engines.protocol import EngineConfig

MLX_BACKENDS = ("mlx-cpu", "mlx-metal")
PROBE_TIMEOUT_SECONDS = 120.0


def calibration_file() -> Path:
    """Where this machine's constants are kept until it reboots (per user and Python)."""
    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        boot = "unknown-boot"
    key = hashlib.sha256(f"{boot}|{sys.executable}|{os.getuid()}".encode()).hexdigest()[:16]
    return Path(tempfile.gettempdir()) / f"skulk-decode-calibration-{key}.json"


def kept_calibration(path: Path) -> DecodeCalibration | None:
    try:
        return DecodeCalibration.model_validate_json(path.read_text())
    except (OSError, ValidationError):
        return None


async def measure_decode_calibration(path: Path | None = None) -> DecodeCalibration | None:
    """The machine's constants: kept ones, else measured now in a runner-like process
    (and kept). None when the probe fails: placement then assumes, and says so."""
    path = path or calibration_file()
    kept = kept_calibration(path)
    if kept is not None:
        return kept
    environment = {**os.environ, **runner_environment(
        EngineConfig(model_path="", context_token_limit=1, n_threads=1))}
    try:
        with anyio.fail_after(PROBE_TIMEOUT_SECONDS):
            done = await anyio.run_process(
                [sys.executable, "-m", "skulk.fitting.decode_probe"], env=environment,
                check=True)
        measured = DecodeCalibration.model_validate_json(done.stdout)
    except (OSError, TimeoutError, ValidationError, subprocess.CalledProcessError) as error:
        logger.warning("could not measure this machine's decode constants: {}", error)
        return None
    partial = path.with_name(f".{path.name}.{os.getpid()}")
    partial.write_text(measured.model_dump_json())
    partial.replace(path)
    return measured
