"""Speculative decoding on the real bundled model (MLX fp32): greedy output with each
drafter is byte-identical to plain greedy decoding, and drafts are kept where the text
repeats. The engine runs in a subprocess with OpenBLAS preloaded, as in a runner."""

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.speculative_support import CODE, import_models, probe

pytestmark = pytest.mark.integration

REQUESTS: list[dict[str, Any]] = [
    {"id": "code", "max_tokens": 72, "messages": [{"role": "user", "content":
        f"Here is a function:\n\n{CODE}\nRename `handle` to `stream`. Reply with code only."}]},
    {"id": "chat", "max_tokens": 40, "messages": [
        {"role": "user", "content": "What makes a good cup of tea?"}]},
    {"id": "list", "max_tokens": 40, "messages": [
        {"role": "user", "content": "Count from one to twenty in words, comma separated."}]},
]
PLAIN = {"prefix_cache_mb": "0", "speculation": "off"}
# One engine thread: two OpenBLAS threads beside pytest's other workers on a 2-core machine
# wait on each other (bench/speculative.py measures with two on a quiet machine).
THREADS = 1


@pytest.fixture(scope="module")
def models(mlx_models: Path) -> Iterator[tuple[Path, Path]]:
    yield import_models(mlx_models)


@pytest.fixture(scope="module")
def plain(models: tuple[Path, Path]) -> dict[str, dict[str, Any]]:
    return probe(models[0], REQUESTS, PLAIN, timeout=600, threads=THREADS)


def test_ngram_drafting_gives_the_same_greedy_text_and_keeps_drafts_on_code(
        models: tuple[Path, Path], plain: dict[str, dict[str, Any]]) -> None:
    # Not adaptive: the adaptive policy pauses drafting by measured step times, so on a
    # loaded machine how many drafts are kept would depend on timing (policy_test covers it).
    options = {"prefix_cache_mb": "0", "drafter": "ngram", "draft_adaptive": "off"}
    drafted = probe(models[0], REQUESTS, options, timeout=600, threads=THREADS)
    for request in REQUESTS:
        assert drafted[request["id"]]["tokens"] == plain[request["id"]]["tokens"], \
            request["id"]
        assert drafted[request["id"]]["text"] == plain[request["id"]]["text"]
    usage = drafted["code"]["usage"]
    assert usage["drafter"] == "ngram" and usage["accepted_tokens"] >= 20, usage
    assert plain["code"]["usage"]["drafted_tokens"] == 0


def test_the_four_bit_copy_drafting_for_fp32_gives_the_same_greedy_text(
        models: tuple[Path, Path], plain: dict[str, dict[str, Any]]) -> None:
    options = {"prefix_cache_mb": "0", "drafter": "draft_model",
               "draft_model_path": str(models[1]), "max_draft": "4",
               "draft_adaptive": "off"}  # every round drafts, so every path is exercised
    drafted = probe(models[0], REQUESTS[:2], options, timeout=600, threads=THREADS)
    for request in REQUESTS[:2]:
        assert drafted[request["id"]]["tokens"] == plain[request["id"]]["tokens"], \
            request["id"]
    usage = drafted["code"]["usage"]
    assert usage["drafter"] == "draft_model" and usage["drafted_tokens"] > 0
    # The 4-bit copy holds the same weights (a lossless repack): most drafts are kept.
    assert usage["accepted_tokens"] > usage["drafted_tokens"] // 2, usage
