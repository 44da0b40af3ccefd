"""Every MLX model family split over a real ring of processes on 127.0.0.1 decodes what
one process running mlx-lm's whole model decodes.

One set of rank processes runs every case in turn (tests/mlx_rank_helper.py, mode
"many"), so seven families cost one Python start-up per rank, not seven.
"""

import json
import subprocess
from pathlib import Path
from typing import Any

import mlx.core as mx
import numpy as np
import pytest

from skulk.model_families.registry import families
from skulk.models.mlx_import.store import import_to_store
from skulk.shared.types.ids import ModelId
from skulk.shared.types.tasks import ChatMessage, GenerationParams
from skulk.testing.family_checkpoint import write_family_checkpoint
from skulk.testing.random_family import FAMILIES, tiny_config, write_random_model
from skulk.worker.engines.mlx.collectives import SoloGroup
from skulk.worker.engines.mlx.engine import MlxEngine
from skulk.worker.engines.mlx.options import MlxOptions
from skulk.worker.engines.mlx.shard_loader import load_shard
from skulk.worker.engines.protocol import EngineConfig
from tests.mlx_rank_helper import greedy
from tests.test_mlx_distributed import ranks, run_ring

__all__ = ["ranks"]  # the fixture, shared with test_mlx_distributed

pytestmark = pytest.mark.integration

# Longer than Gemma 3's test window of 4 positions, with left padding in the second row.
PROMPT = [[5, 17, 99, 3, 42, 7, 250, 11], [0, 0, 8, 9, 10, 200, 13, 1]]
PADDING = [0, 2]
STEPS = 8
N_LAYERS = 4


def expected(model_dir: Path) -> tuple[list[list[int]], np.ndarray]:
    """Greedy tokens and prompt logits of mlx-lm's whole model in this process."""
    shard = load_shard(model_dir, SoloGroup(), 0, N_LAYERS, "pipeline")
    tokens, logits, _ = greedy(shard, SoloGroup(), PROMPT, PADDING, STEPS)
    assert logits is not None
    return tokens, np.array(logits.astype(mx.float32))


def run_jobs(ranks: list[subprocess.Popen[str]], jobs: list[dict[str, Any]],
             size: int) -> list[tuple[list[list[int]], np.ndarray]]:
    """Run every job over one ring of `size` ranks; per job, the agreed tokens and the
    decider's prompt logits."""
    for job in jobs:
        Path(job["out"]).mkdir(parents=True)
    spec = {"mode": "many", "jobs": jobs, "prompt": PROMPT, "padding": PADDING,
            "steps": STEPS, "connect_deadline": 30.0}
    finished = run_ring(ranks, spec, size)
    for rank, result in enumerate(finished):
        assert result.returncode == 0, f"rank {rank} failed:\n{result.stderr}"
    results = []
    for job in jobs:
        out = Path(job["out"])
        reports = [json.loads((out / f"rank{rank}.json").read_text()) for rank in range(size)]
        deciders = [report["rank"] for report in reports if report["decides"]]
        assert deciders == [size - 1 if job["sharding"] == "pipeline" else 0], job
        assert all(report["tokens"] == reports[0]["tokens"] for report in reports)
        results.append((reports[0]["tokens"], np.load(out / "logits.npy")))
    return results


def write_family(tmp_path: Path, model_type: str) -> Path:
    # Scaled projections: random layers at mlx's default scale repeat one token.
    return write_random_model(tmp_path / model_type, tiny_config(model_type, n_layers=N_LAYERS),
                              seed=len(model_type), scale=4.0)


def test_every_family_over_two_ranks_by_layers_and_by_heads(
    tmp_path: Path, ranks: list[subprocess.Popen[str]]
) -> None:
    models = {kind: write_family(tmp_path, kind) for kind in FAMILIES}
    jobs = [{"model_dir": str(models[kind]), "sharding": "pipeline",
             "ranges": [[0, 1], [1, N_LAYERS]], "out": str(tmp_path / "out" / kind)}
            for kind in FAMILIES]
    tensor_kinds = [kind for kind in FAMILIES if "tensor" in families()[kind].splits]
    jobs += [{"model_dir": str(models[kind]), "sharding": "tensor",
              "ranges": [[0, N_LAYERS]] * 2, "out": str(tmp_path / "out" / f"{kind}-tensor")}
             for kind in tensor_kinds]
    results = run_jobs(ranks, jobs, 2)

    for kind, (tokens, logits) in zip(FAMILIES, results, strict=False):
        want_tokens, want_logits = expected(models[kind])
        assert len({t for step in want_tokens for t in step}) > 2, f"{kind}: degenerate"
        assert tokens == want_tokens, kind
        # A pipeline runs the same kernels on the same shapes: identical, not just close.
        np.testing.assert_array_equal(logits, want_logits, err_msg=kind)
    for kind, (tokens, logits) in zip(tensor_kinds, results[len(FAMILIES):], strict=True):
        want_tokens, want_logits = expected(models[kind])
        # Partial sums add in another order: compare the teacher-forced top-1 tokens.
        agree = np.mean(logits.argmax(-1) == want_logits.argmax(-1))
        assert agree >= 0.98, f"{kind}: {agree:.2%} of prompt positions agree"
        np.testing.assert_allclose(logits, want_logits, rtol=1e-3, atol=1e-3, err_msg=kind)
        assert tokens == want_tokens, kind


def test_gemma3_over_three_ranks(tmp_path: Path, ranks: list[subprocess.Popen[str]]) -> None:
    """Sliding and global layers on every rank (the pattern alternates), a middle rank
    that neither embeds nor decides."""
    model_dir = write_family(tmp_path, "gemma3_text")
    [(tokens, logits)] = run_jobs(ranks, [{
        "model_dir": str(model_dir), "sharding": "pipeline",
        "ranges": [[0, 1], [1, 3], [3, N_LAYERS]], "out": str(tmp_path / "out")}], 3)
    want_tokens, want_logits = expected(model_dir)
    assert tokens == want_tokens
    np.testing.assert_array_equal(logits, want_logits)


@pytest.mark.parametrize("model_type", ["qwen3", "gemma3_text", "mistral"])
def test_an_imported_model_split_over_two_engines_answers_like_one(
    tmp_path: Path, ranks: list[subprocess.Popen[str]], model_type: str
) -> None:
    """A published (bf16) checkpoint imported into the store, then the MLX engine itself
    on two ranks over the ring, speculation and all, against the engine on one."""
    source = write_family_checkpoint(tmp_path / "published", model_type, n_layers=3, seed=2)
    model_dir = import_to_store(source, tmp_path / "models", f"{model_type}-mlx", model_type,
                                None).path
    alone = MlxEngine(EngineConfig(model_path=str(model_dir), context_token_limit=512))
    alone.load()
    want = [t for chunk in alone.generate(chat(TEXT, 12)) for t in chunk.token_ids]
    assert len(set(want)) > 2, "degenerate output compares nothing"
    out = tmp_path / "out"
    out.mkdir()
    finished = run_ring(ranks, {"mode": "engine", "model_dir": str(model_dir),
                                "ranges": [[0, 1], [1, 3]], "text": TEXT, "max_tokens": 12,
                                "out": str(out)}, 2)
    for rank, result in enumerate(finished):
        assert result.returncode == 0, f"rank {rank} failed:\n{result.stderr}"
    assert json.loads((out / "engine.json").read_text())["tokens"] == want


TEXT = "The quick brown fox jumps over the lazy dog. Hello!"


def chat(text: str, max_tokens: int) -> GenerationParams:
    return GenerationParams(model_id=ModelId("m"), max_tokens=max_tokens, temperature=0.0,
                            messages=[ChatMessage(role="user", content=text)])


# text, max_tokens, the step at which it reaches each rank (rank 1 often later or earlier).
STAGGERED = [("The quick brown fox", 14, {"0": 0, "1": 0}),
             ("Hello! How are you today?", 12, {"0": 0, "1": 3}),
             ("Numbers like 12345 appear", 200, {"0": 2, "1": 1}),  # cancelled by rank 1
             ("Skulk joins machines", 10, {"0": 9, "1": 14}),
             ("Café, naïve, über", 12, {"0": 20, "1": 17}),
             ("user assistant system tool", 8, {"0": 30, "1": 34})]
CANCELLED = 2


def test_a_full_pipeline_answers_like_one_engine_through_joins_and_a_cancel(
    tmp_path: Path, ranks: list[subprocess.Popen[str]]
) -> None:
    """Two ranks in overlapped runs (rank 0 computes one micro-batch while rank 1 computes
    and samples the other, the tokens coming back over the ring): requests join at
    staggered steps, rank 1 alone cancels one mid-stream, a lone request drafts; every
    other request gets exactly one engine's greedy tokens, the cancelled one a prefix."""
    source = write_family_checkpoint(tmp_path / "published", "qwen2", n_layers=3, seed=1)
    model_dir = import_to_store(source, tmp_path / "models", "qwen2-mlx", "qwen2", None).path
    alone = MlxEngine(EngineConfig(model_path=str(model_dir), context_token_limit=512,
                                   options=MlxOptions.parse({"speculation": "false"})))
    alone.load()
    # The cancelled request stops long before its 200 tokens: its first 48 are enough.
    want = [[t for c in alone.generate(chat(text, 48 if i == CANCELLED else n))
             for t in c.token_ids] for i, (text, n, _) in enumerate(STAGGERED)]
    assert len({tuple(answer) for answer in want}) > 3, "the answers compare nothing"
    out = tmp_path / "out"
    out.mkdir()
    finished = run_ring(ranks, {
        "mode": "staggered", "model_dir": str(model_dir), "ranges": [[0, 1], [1, 3]],
        "requests": STAGGERED, "cancel": CANCELLED, "cancel_rank": 1, "cancel_after": 12,
        "out": str(out), "options": {"pipeline_micro_batches": "true"}}, 2)
    for rank, result in enumerate(finished):
        assert result.returncode == 0, f"rank {rank} failed:\n{result.stderr}"
    leader, last = (json.loads((out / f"rank{r}.json").read_text()) for r in (0, 1))
    statuses = {f"t{i}": "complete" for i in range(len(STAGGERED))}
    statuses[f"t{CANCELLED}"] = "cancelled"
    assert leader["ended"] == last["ended"] == statuses
    for index, answer in enumerate(want):
        got = leader["tokens"][f"t{index}"]
        if index == CANCELLED:
            assert 0 < len(got) < len(answer) and got == answer[: len(got)]
        else:
            assert got == answer, index
    # Most tokens came out of overlapped runs, and membership changes ended several.
    assert leader["runs"] >= 3
    assert leader["overlapped_steps"] == last["overlapped_steps"] >= 20
