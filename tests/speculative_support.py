"""Shared by the MLX tests and the speculative decoding benchmark: the bundled model
imported for MLX (fp32 and its lossless 4-bit copy), put into nodes' stores, and the
engine probe run as a subprocess."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from skulk.models.catalog import ModelCatalog
from skulk.models.mlx_import.store import ensure_mlx_model
from skulk.worker.engines.mlx.cpu import runner_environment
from skulk.worker.engines.protocol import EngineConfig

ROOT = Path(__file__).resolve().parents[1]
PROBE = ROOT / "tests" / "mlx_speculative_probe.py"
# A function to hand back with a small edit: the code-editing prompt the tests share.
CODE = '''def parse_config(path):
    with open(path) as handle:
        lines = handle.read().splitlines()
    config = {}
    for line in lines:
        key, _, value = line.partition("=")
        config[key.strip()] = value.strip()
    return config
'''


def bundled_mlx_model(models_dir: Path, q_bits: int | None = None) -> Path:
    """The bundled SmolLM2 imported for MLX into `models_dir` (fp32, or `q_bits`)."""
    catalog = ModelCatalog.builtin(models_dir)
    card = catalog.resolve("smollm2-135m")
    if card is None:
        raise RuntimeError("the catalog has no smollm2-135m card")
    return ensure_mlx_model(catalog, card, q_bits=q_bits)


def import_models(models_dir: Path) -> tuple[Path, Path]:
    """The fp32 and the 4-bit MLX copies of the bundled SmolLM2."""
    return bundled_mlx_model(models_dir), bundled_mlx_model(models_dir, q_bits=4)


def probe(model: Path, requests: list[dict[str, Any]], options: dict[str, str],
          timeout: float = 900.0, threads: int = 2) -> dict[str, dict[str, Any]]:
    """Run the requests through the engine in a fresh process, one after another."""
    config = EngineConfig(model_path=str(model), context_token_limit=4096, n_threads=threads)
    env = {**os.environ, **runner_environment(config),
           "PYTHONPATH": f"{ROOT / 'src'}:{ROOT}"}
    job = {"model": str(model), "options": options, "requests": requests, "threads": threads}
    done = subprocess.run([sys.executable, str(PROBE)], input=json.dumps(job), env=env,
                          capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        raise RuntimeError(f"the engine probe failed ({done.returncode}): {done.stderr[-3000:]}")
    results = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    return {result["id"]: result for result in results}


def seed_store(data_dir: Path, *model_dirs: Path) -> None:
    """A node's model store (`data_dir/models`) holding `model_dirs` as if the node had
    imported them itself: hard links, so a second import (seconds of CPU per node and
    model) is skipped and nothing is copied. Copies where they cannot share a filesystem."""
    for model_dir in model_dirs:
        target = data_dir / "models" / model_dir.name
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            shutil.copytree(model_dir, target, copy_function=os.link)
        except OSError:
            shutil.rmtree(target, ignore_errors=True)
            shutil.copytree(model_dir, target)
