"""A node's GPUs from its probe to `skulk status`: `nvidia-smi`'s answer (faked) becomes
the reading's devices, `GET /cluster` lists them, and the status text names each."""

import time
from collections.abc import Sequence
from pathlib import Path

import pytest

from skulk.api.routers.instances_test import api_context, serve
from skulk.cli.status_view import status_lines
from skulk.testing.placement import node
from skulk.worker.gpus import NVIDIA_SMI, probe_gpus

# `nvidia-smi --query-gpu=name,memory.total,memory.free` on an H200 with a model loaded.
H200_ANSWER = "NVIDIA H200, 143771, 141213\n"


def fake_nvidia_smi(argv: Sequence[str]) -> str | None:
    return H200_ANSWER if tuple(argv) == NVIDIA_SMI else None


@pytest.mark.anyio
async def test_a_gpu_probed_on_a_node_reaches_cluster_and_status(tmp_path: Path) -> None:
    gpus = probe_gpus("linux", run=fake_nvidia_smi, sysfs=tmp_path)
    reading = node("gpu-node").model_copy(update={"stamp": time.time(), "gpus": gpus})
    context, _ = api_context([reading])
    async with serve(context) as client:
        body = (await client.get("/cluster")).json()
    listed = next(n for n in body["nodes"] if n["node_id"] == "gpu-node")
    assert listed["gpus"] == [{"name": "NVIDIA H200", "backend": "cuda",
                               "vram_total_bytes": 143771 * 1024**2,
                               "vram_free_bytes": 141213 * 1024**2}]
    assert "    gpu 0: NVIDIA H200 (cuda), 2.50 GiB of 140 GiB used" in status_lines(body)
