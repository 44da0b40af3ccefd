"""MLX pipeline and tensor shards over a real ring of processes on 127.0.0.1.

Each case starts its ranks as separate processes (tests/mlx_rank_helper.py) and compares
what the deciding rank saw with one process running the whole model. Pipelines of every
family, over 2 and 3 ranks, are in test_mlx_families_ring.py.
"""

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import mlx.core as mx
import numpy as np
import pytest

from skulk.testing.ports import free_port
from skulk.testing.random_llama import (
    tiny_llama_config,
    write_random_llama,
)
from skulk.worker.engines.mlx.collectives import SoloGroup
from skulk.worker.engines.mlx.ring import COLLECTIVE_DEADLINE_EXIT_CODE
from skulk.worker.engines.mlx.shard_loader import load_shard
from tests.mlx_rank_helper import greedy
from tests.speculative_support import bundled_mlx_model

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parent.parent
PROMPT = [[5, 17, 99, 3, 42, 7, 250, 11], [0, 0, 8, 9, 10, 200, 13, 1]]
PADDING = [0, 2]
STEPS = 16
RANK_TIMEOUT = 60.0


@dataclass
class Finished:
    returncode: int
    stdout: str
    stderr: str
    seconds: float


def free_ports(count: int) -> list[int]:
    return [free_port() for _ in range(count)]


def start_rank(spec: dict[str, Any]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "tests.mlx_rank_helper", json.dumps(spec)], cwd=REPO,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=dict(os.environ))


def finish(process: subprocess.Popen[str], timeout: float, started: float) -> Finished:
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        stdout, stderr = process.communicate()
        pytest.fail(f"rank process {process.pid} still running after {timeout} s:\n{stderr}")
    return Finished(process.returncode, stdout, stderr, time.monotonic() - started)


@pytest.fixture
def ranks() -> Iterator[list[subprocess.Popen[str]]]:
    """Processes a test starts; any still running at the end are killed."""
    started: list[subprocess.Popen[str]] = []
    yield started
    for process in started:
        if process.poll() is None:
            process.kill()
            process.communicate()


def run_ring(ranks: list[subprocess.Popen[str]], spec: dict[str, Any], size: int
             ) -> list[Finished]:
    hosts = [f"127.0.0.1:{port}" for port in free_ports(size)]
    started = time.monotonic()
    for rank in range(size):
        ranks.append(start_rank({**spec, "rank": rank, "hosts": hosts}))
    return [finish(process, RANK_TIMEOUT, started) for process in ranks]


def single_process(model_dir: Path, n_layers: int, steps: int = STEPS
                   ) -> tuple[list[list[int]], np.ndarray]:
    shard = load_shard(model_dir, SoloGroup(), 0, n_layers, "pipeline")
    tokens, logits, _ = greedy(shard, SoloGroup(), PROMPT, PADDING, steps)
    assert logits is not None
    return tokens, np.array(logits.astype(mx.float32))


def distributed(
    ranks: list[subprocess.Popen[str]], model_dir: Path, out: Path, sharding: str,
    ranges: list[list[int]], prompt: list[list[int]] = PROMPT, padding: list[int] = PADDING,
    steps: int = STEPS,
) -> tuple[list[list[int]], np.ndarray]:
    """Run the ranks; the tokens they agreed on and the decider's prompt logits."""
    out.mkdir()
    spec = {"mode": "greedy", "model_dir": str(model_dir), "sharding": sharding,
            "ranges": ranges, "prompt": prompt, "padding": padding, "steps": steps,
            "out": str(out), "connect_deadline": 30.0}
    finished = run_ring(ranks, spec, len(ranges))
    for rank, result in enumerate(finished):
        assert result.returncode == 0, f"rank {rank} failed:\n{result.stderr}"
    reports = [json.loads((out / f"rank{rank}.json").read_text())
               for rank in range(len(finished))]
    deciders = [report["rank"] for report in reports if report["decides"]]
    expected_decider = len(finished) - 1 if sharding == "pipeline" else 0
    assert deciders == [expected_decider]
    # Every rank learnt the same tokens through the all_sum broadcast.
    assert all(report["tokens"] == reports[0]["tokens"] for report in reports)
    return reports[0]["tokens"], np.load(out / "logits.npy")


def test_tensor_split_over_three_ranks_matches_one_process(
    tmp_path: Path, ranks: list[subprocess.Popen[str]]
) -> None:
    config = tiny_llama_config(n_layers=2, hidden_size=144, heads=9, kv_heads=3,
                               intermediate_size=192)
    model_dir = write_random_llama(tmp_path / "tiny", config, seed=11)
    # Few steps: three busy-waiting ranks on two cores make every all-reduce slow.
    expected_tokens, expected_logits = single_process(model_dir, 2, steps=4)
    tokens, logits = distributed(ranks, model_dir, tmp_path / "out", "tensor", [[0, 2]] * 3,
                                 steps=4)
    # Partial sums are added in another order than one matmul adds them.
    np.testing.assert_allclose(logits, expected_logits, rtol=1e-4, atol=1e-4)
    assert tokens == expected_tokens


def test_a_quantized_split_by_heads_decodes_through_the_split_head(
    tmp_path: Path, ranks: list[subprocess.Popen[str]]
) -> None:
    """One row of three tokens: the prompt's logits and every decode step go through the
    head split by vocabulary rows (at most 4 rows), on a 4-bit model whose tied embedding
    is split with its scales and biases."""
    model_dir = write_random_llama(tmp_path / "q4", tiny_llama_config(n_layers=2), seed=5,
                                   quantize_bits=4)
    prompt, padding = [[5, 17, 99]], [0]
    shard = load_shard(model_dir, SoloGroup(), 0, 2, "pipeline")
    want_tokens, want_logits, _ = greedy(shard, SoloGroup(), prompt, padding, 8)
    assert want_logits is not None
    tokens, logits = distributed(ranks, model_dir, tmp_path / "out", "tensor",
                                 [[0, 2]] * 2, prompt=prompt, padding=padding, steps=8)
    np.testing.assert_allclose(logits, np.array(want_logits.astype(mx.float32)),
                               rtol=1e-4, atol=1e-4)
    assert tokens == want_tokens


def test_a_missing_neighbour_ends_the_connect_within_its_deadline(
    ranks: list[subprocess.Popen[str]]
) -> None:
    hosts = [f"127.0.0.1:{port}" for port in free_ports(2)]
    started = time.monotonic()
    ranks.append(start_rank({"mode": "connect", "rank": 0, "hosts": hosts,
                             "connect_deadline": 3.0}))
    result = finish(ranks[0], 30.0, started)
    assert result.returncode != 0
    assert "GroupConnectTimeout: rank 0: rank 1 at" in result.stderr
    assert "did not answer within 3 s" in result.stderr
    assert "connected" not in result.stdout
    # Python start-up and imports come on top of the 3 s deadline.
    assert result.seconds < 20.0


@pytest.mark.parametrize("peer", ["exit", "hang"])
def test_a_rank_waiting_on_a_lost_peer_exits_instead_of_hanging(
    ranks: list[subprocess.Popen[str]], peer: str
) -> None:
    spec = {"mode": "stall", "peer": peer, "connect_deadline": 30.0,
            "collective_deadline": 2.0}
    hosts = [f"127.0.0.1:{port}" for port in free_ports(2)]
    for rank in range(2):
        ranks.append(start_rank({**spec, "rank": rank, "hosts": hosts}))
    assert ranks[1].stdout is not None
    assert ranks[1].stdout.readline().strip() == "connected"
    waiting_since = time.monotonic()
    waiter = finish(ranks[1], 30.0, waiting_since)
    assert "received" not in waiter.stdout
    assert waiter.seconds < 2.0 + 5.0
    if peer == "hang":
        assert waiter.returncode == COLLECTIVE_DEADLINE_EXIT_CODE
        assert "recv (4,) from rank 0 overran its deadline" in waiter.stderr
    else:
        assert waiter.returncode == 1
        assert "GroupError" in waiter.stderr and "recv (4,) from rank 0 failed" in waiter.stderr


def test_smollm2_pipeline_over_two_ranks_decodes_like_one_process(
    tmp_path: Path, ranks: list[subprocess.Popen[str]], mlx_models: Path
) -> None:
    model_dir = bundled_mlx_model(mlx_models, q_bits=4)
    prompt = [[1, 9690, 198, 2683, 359, 253, 5356, 5646, 2]]
    shard = load_shard(model_dir, SoloGroup(), 0, 30, "pipeline")
    expected_tokens, expected_logits, _ = greedy(shard, SoloGroup(), prompt, [0], STEPS)
    assert expected_logits is not None
    tokens, logits = distributed(ranks, model_dir, tmp_path / "out", "pipeline",
                                 [[0, 15], [15, 30]], prompt=prompt, padding=[0])
    assert tokens == expected_tokens
    np.testing.assert_array_equal(logits, np.array(expected_logits))
