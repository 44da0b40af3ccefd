"""Speculative decoding in the MLX engine on tiny random-weight models: the cache after a
trim, greedy output equal to plain decoding with each drafter, usage, refusing drafting,
and the sampled rule's output distribution on real logits."""

from pathlib import Path

import mlx.core as mx
import numpy as np
import pytest

from skulk.shared.types.chunks import TokenChunk
from skulk.shared.types.ids import ModelId
from skulk.shared.types.tasks import ChatMessage, GenerationParams, SpeculativeParams
from skulk.testing.tiny_model import write_tiny_model
from skulk.worker.engines.mlx import mlx_api
from skulk.worker.engines.mlx.conftest import EngineFactory
from skulk.worker.engines.mlx.engine_test import chunks_in, run_batch
from skulk.worker.engines.mlx.sampling import RowSampler
from skulk.worker.engines.mlx.speculation.accept import accept_sampled

PROMPTS = ["The quick brown fox", "Hello! How are you today?", "Numbers like 12345 and",
           "Skulk joins machines into one inference cluster behind one endpoint. Skulk"]


def params(text: str, max_tokens: int = 40, drafter: str | None = None,
           **update: object) -> GenerationParams:
    speculative = None if drafter is None else SpeculativeParams.model_validate(
        {"drafter": drafter})
    base = GenerationParams(model_id=ModelId("tiny"), max_tokens=max_tokens,
                            temperature=0.0, speculative=speculative,
                            messages=[ChatMessage(role="user", content=text)])
    return base.model_copy(update=update)


def tokens_and_usage(chunks: list[TokenChunk]) -> tuple[list[int], tuple[int, int]]:
    usage = chunks[-1].usage
    assert usage is not None
    return [t for c in chunks for t in c.token_ids], (usage.drafted_tokens,
                                                      usage.accepted_tokens)


def test_a_trimmed_cache_equals_one_built_from_the_committed_tokens(
        tiny_model_dir: Path) -> None:
    model = mlx_api.load_model(tiny_model_dir)
    prompt, drafts, kept = [5, 9, 14, 3, 22, 7], [40, 41, 42, 43], 1
    speculative = mlx_api.make_batch_cache(model.n_layers, [0])
    model(mx.array([prompt]), speculative)
    model(mx.array([drafts]), speculative)
    mlx_api.trim_cache(speculative, len(drafts) - kept)
    committed = mlx_api.make_batch_cache(model.n_layers, [0])
    model(mx.array([prompt + drafts[:kept]]), committed)
    assert mlx_api.cache_tokens(speculative) == mlx_api.cache_tokens(committed)
    row_a, row_b = mlx_api.extract_row(speculative, 0), mlx_api.extract_row(committed, 0)
    for (keys_a, values_a), (keys_b, values_b) in zip(row_a.layers, row_b.layers,
                                                      strict=True):
        assert mx.allclose(keys_a, keys_b, atol=1e-5) and mx.allclose(values_a, values_b,
                                                                      atol=1e-5)
    # And the next step sees the same thing: equal logits for the same next token.
    after_a = model(mx.array([[17]]), speculative)
    after_b = model(mx.array([[17]]), committed)
    assert mx.allclose(after_a, after_b, atol=1e-4)


@pytest.mark.parametrize("prompt", PROMPTS)
def test_greedy_output_with_ngram_drafting_equals_plain_decoding(
        make_engine: EngineFactory, prompt: str) -> None:
    plain, _ = tokens_and_usage(list(
        make_engine(speculation="off", prefix_cache_mb="0").generate(params(prompt))))
    drafted, (proposed, kept) = tokens_and_usage(list(
        make_engine(prefix_cache_mb="0").generate(params(prompt, drafter="ngram"))))
    assert drafted == plain
    assert 0 <= kept <= proposed


def test_usage_names_the_drafter_that_proposed(make_engine: EngineFactory) -> None:
    """The tiny random model's text rarely repeats, so n-gram drafts are mostly rejected
    here (acceptance is measured on the real model); usage still counts them."""
    engine = make_engine(prefix_cache_mb="0", draft_adaptive="off")
    final = list(engine.generate(params(PROMPTS[0], max_tokens=60)))[-1]
    assert final.usage is not None and final.usage.drafted_tokens > 0
    assert final.usage.drafter == "ngram"


def test_a_request_can_refuse_drafting(make_engine: EngineFactory) -> None:
    chunks = list(make_engine().generate(params(PROMPTS[3], drafter="none")))
    assert chunks[-1].usage is not None
    assert chunks[-1].usage.drafted_tokens == 0 and chunks[-1].usage.drafter is None


def test_node_default_none_still_lets_a_request_ask(make_engine: EngineFactory) -> None:
    engine = make_engine(drafter="none", prefix_cache_mb="0")
    default = list(engine.generate(params(PROMPTS[3], max_tokens=60)))
    asked = list(engine.generate(params(PROMPTS[3], max_tokens=60, drafter="ngram")))
    assert tokens_and_usage(default)[1] == (0, 0)
    assert tokens_and_usage(asked)[0] == tokens_and_usage(default)[0]


@pytest.fixture(scope="module")
def other_tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_tiny_model(tmp_path_factory.mktemp("tiny-draft"), seed=3)


@pytest.mark.parametrize("draft", ["same", "other"])
def test_greedy_output_with_a_draft_model_equals_plain_decoding(
        make_engine: EngineFactory, tiny_model_dir: Path, other_tiny_model: Path,
        draft: str) -> None:
    """The target itself as draft model keeps every draft; another model keeps fewer;
    the output is the target's either way. Drafting is fixed-length here: a draft model
    as big as its target is hopeless on cost, and the adaptive policy would rightly stop
    asking it (that choice has its own tests in policy_test.py)."""
    path = tiny_model_dir if draft == "same" else other_tiny_model
    engine = make_engine(prefix_cache_mb="0", drafter="draft_model",
                         draft_model_path=str(path), draft_adaptive="off")
    plain_engine = make_engine(speculation="off", prefix_cache_mb="0")
    for prompt in PROMPTS[:2]:
        plain, _ = tokens_and_usage(list(plain_engine.generate(params(prompt))))
        drafted, (proposed, kept) = tokens_and_usage(list(engine.generate(params(prompt))))
        assert drafted == plain
        assert proposed > 0
        if draft == "same":
            assert kept == proposed


def test_a_draft_models_cost_is_known_before_the_first_request(
        make_engine: EngineFactory, tiny_model_dir: Path) -> None:
    engine = make_engine(drafter="draft_model", draft_model_path=str(tiny_model_dir))
    speculator = engine.loop.speculator
    assert speculator is not None and speculator.draft_cost["draft_model"] > 0
    assert "ngram" not in speculator.draft_cost  # free drafters are not timed


def test_an_unavailable_drafter_decodes_plainly(make_engine: EngineFactory) -> None:
    chunks = list(make_engine().generate(params(PROMPTS[0], drafter="draft_model")))
    assert tokens_and_usage(chunks)[1] == (0, 0)


def test_several_requests_decode_together_unchanged(make_engine: EngineFactory) -> None:
    alone = {str(i): tokens_and_usage(list(make_engine(prefix_cache_mb="0").generate(
        params(p))))[0] for i, p in enumerate(PROMPTS)}
    together = run_batch(make_engine(prefix_cache_mb="0"),
                         {str(i): params(p) for i, p in enumerate(PROMPTS)},
                         submit_at={"0": 0, "1": 0, "2": 6, "3": 12})
    for task_id, tokens in alone.items():
        assert [t for c in chunks_in(together[task_id]) for t in c.token_ids] == tokens


def test_sampled_requests_with_drafting_finish_within_their_limits(
        make_engine: EngineFactory) -> None:
    engine = make_engine(prefix_cache_mb="0")
    for prompt in PROMPTS:
        request = params(prompt, max_tokens=30, drafter="ngram", temperature=0.7)
        tokens, (proposed, kept) = tokens_and_usage(list(engine.generate(request)))
        assert 1 <= len(tokens) <= 30 and 0 <= kept <= proposed


def test_sampled_acceptance_keeps_the_tiny_models_distribution(
        tiny_model_dir: Path, other_tiny_model: Path) -> None:
    """Target p from the tiny model's real logits (temperature 1, its sampler chain),
    drafts drawn from another model's distribution q: the committed first token follows
    p over many draws."""
    target, drafter = (mlx_api.load_model(d) for d in (tiny_model_dir, other_tiny_model))
    context = mx.array([[5, 9, 14, 3, 22, 7]])
    sampler = RowSampler(temperature=1.0, top_k=8, min_p=0.0, seed=0)
    p = sampler.distribution(np.array(target(context, mlx_api.make_batch_cache(
        target.n_layers, [0]))[0, -1], dtype=np.float32))
    q = RowSampler(temperature=1.0, top_k=8, min_p=0.0).distribution(np.array(drafter(
        context, mlx_api.make_batch_cache(drafter.n_layers, [0]))[0, -1], dtype=np.float32))
    rng = np.random.default_rng(4)
    draws = 20000
    counts = np.zeros(len(p))
    for _ in range(draws):
        draft = int(rng.choice(len(q), p=q))
        verdict = accept_sampled([draft], [q], [p, p], rng)
        counts[draft if verdict.accepted else verdict.next_token] += 1
    support = np.flatnonzero(p > 0)
    assert set(np.flatnonzero(counts)) <= set(support)
    expected = p[support] * draws
    chi_square = float(((counts[support] - expected) ** 2 / expected).sum())
    assert chi_square < 24.3, chi_square  # p = 0.001 with 7 degrees of freedom
