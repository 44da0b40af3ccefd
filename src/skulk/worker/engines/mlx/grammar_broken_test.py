"""A constrained answer whose grammar breaks (a failed-over stream resumed after tokens
the grammar rejects, or a token the mask should have forbidden) ends with an error chunk
that says so, beside requests that go on; the runner's loop lives on. Whole, drafting or
not, and split by layers, where only the last rank knows and every rank must agree."""

import json
from pathlib import Path

import pytest

from skulk.shared.types.chunks import ErrorChunk
from skulk.testing.function_schemas import function_schemas
from skulk.testing.tiny_model import write_tiny_model
from skulk.worker.engines.grammar.constraint import Constraint
from skulk.worker.engines.mlx import mlx_api
from skulk.worker.engines.mlx.conftest import EngineFactory
from skulk.worker.engines.mlx.engine_test import chunks_in, done, params, run_batch
from skulk.worker.engines.mlx.shard_loader import load_shard
from skulk.worker.engines.mlx.split_embeddings_test import RANKS, ended, outputs, run_ranks
from skulk.worker.engines.protocol import EngineEvent, TaskOutput

SCHEMA = json.dumps(function_schemas()["get_weather"])


def errors(events: list[EngineEvent]) -> list[ErrorChunk]:
    return [e.chunk for e in events if isinstance(e, TaskOutput)
            and isinstance(e.chunk, ErrorChunk)]


@pytest.mark.parametrize("speculation", ["false", "true"])
def test_a_resume_the_grammar_rejects_ends_with_an_error_beside_others(
        make_engine: EngineFactory, speculation: str) -> None:
    engine = make_engine(speculation=speculation)
    rejected = engine.loop.vocabulary
    assert rejected is not None
    events = run_batch(engine, {
        "resumed": params("Weather?", max_tokens=40, output="json", json_schema=SCHEMA,
                          continuation=rejected.tokenizer.tokenize_str("[1,")),
        "plain": params("Hello there", max_tokens=6)})
    [error] = errors(events["resumed"])
    assert error.error_kind == "internal" and "cannot resume" in error.message
    assert done(events["resumed"]).status == "failed"
    assert done(events["plain"]).status == "complete" and chunks_in(events["plain"])
    # The loop goes on serving constrained answers.
    after = run_batch(engine, {"next": params("Weather?", max_tokens=60, output="json",
                                              json_schema=SCHEMA)})
    assert done(after["next"]).status == "complete" and not errors(after["next"])


def test_a_token_the_mask_should_have_forbidden_ends_with_an_error(
        make_engine: EngineFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    engine = make_engine(speculation="false")
    vocabulary = engine.loop.vocabulary
    assert vocabulary is not None
    [bracket] = vocabulary.tokenizer.tokenize_str("[")
    # A fault in the masking (faked here): the row's choice ignores the grammar.
    monkeypatch.setattr(Constraint, "vetted", lambda self, token, remaining: bracket)
    events = run_batch(engine, {
        "json": params("Weather?", max_tokens=200, output="json", json_schema=SCHEMA),
        "plain": params("Hello there", max_tokens=6)})
    [error] = errors(events["json"])
    assert "broke the request's grammar" in error.message and "'['" in error.message
    assert done(events["json"]).status == "failed" and not chunks_in(events["json"])
    assert done(events["plain"]).status == "complete"


def test_split_by_layers_every_rank_ends_the_request_the_last_rank_found_broken(
        tmp_path: Path) -> None:
    model_dir = write_tiny_model(tmp_path, layers=RANKS)
    tokenizer = mlx_api.load_tokenizer(model_dir)
    resumed = params("Weather?", max_tokens=40, output="json", json_schema=SCHEMA,
                     continuation=tokenizer.encode("[1,", add_special_tokens=False))
    results = run_ranks(model_dir, lambda group: load_shard(
        model_dir, group, group.rank, group.rank + 1, "pipeline"),
        {"resumed": resumed, "plain": params("Hello there", max_tokens=6)})
    assert [ended(results[r]) for r in range(RANKS)] == [
        {"resumed": "failed", "plain": "complete"}] * RANKS
    [error] = outputs(results[0], "resumed")
    assert isinstance(error, ErrorChunk) and "broke the request's grammar" in error.message
    assert not any(isinstance(e, TaskOutput) for r in (1, 2) for e in results[r])
