import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from skulk.models.catalog import ModelCatalog
from skulk.shared.types.chunks import TokenChunk
from skulk.shared.types.ids import ModelId
from skulk.shared.types.tasks import ChatMessage, GenerationParams
from skulk.worker.engines.llama_cpp.engine import LlamaCppEngine
from skulk.worker.engines.protocol import ContextOverflow, EngineConfig

pytestmark = pytest.mark.integration

QUESTION = "What is the capital of France? Answer in one sentence."


def model_path() -> str:
    catalog = ModelCatalog.builtin(Path("."))
    card = catalog.resolve("smollm2-135m")
    assert card is not None
    return str(catalog.local_path(card, "gguf"))


@pytest.fixture(scope="module")
def engine() -> Iterator[LlamaCppEngine]:
    loaded = LlamaCppEngine(EngineConfig(model_path=model_path(), context_token_limit=2048))
    loaded.load()
    loaded.warm_up()
    yield loaded


def params(text: str = QUESTION, **kwargs: object) -> GenerationParams:
    return GenerationParams(model_id=ModelId("smollm2-135m"),
                            messages=[ChatMessage(role="user", content=text)],
                            **kwargs)  # type: ignore[arg-type]


def run(engine: LlamaCppEngine, p: GenerationParams) -> tuple[str, list[TokenChunk]]:
    chunks = list(engine.generate(p))
    return "".join(c.text for c in chunks), chunks


def test_greedy_output_equals_create_chat_completion(engine: LlamaCppEngine) -> None:
    from llama_cpp import Llama

    direct = Llama(model_path=model_path(), n_ctx=2048, n_threads=os.cpu_count(),
                   verbose=False)
    for question, max_tokens in [(QUESTION, 64), ("Write a haiku about rain.", 48)]:
        expected = direct.create_chat_completion(
            messages=[{"role": "user", "content": question}], temperature=0,
            max_tokens=max_tokens)["choices"][0]["message"]["content"]  # type: ignore[index]
        text, chunks = run(engine, params(question, temperature=0.0, max_tokens=max_tokens))
        assert text == expected
        assert len(chunks) > 5


def test_max_tokens_finishes_with_length_and_counts_exactly(engine: LlamaCppEngine) -> None:
    _, chunks = run(engine, params("Tell me a long story.", max_tokens=7, temperature=0.0))
    final = chunks[-1]
    assert final.finish_reason == "length"
    assert final.usage is not None and final.usage.completion_tokens == 7
    assert final.usage.prompt_tokens > 10


def test_stop_sequence_cuts_the_text_before_it(engine: LlamaCppEngine) -> None:
    full, _ = run(engine, params(temperature=0.0, max_tokens=40))
    stop = full.split()[2]
    text, chunks = run(engine, params(temperature=0.0, max_tokens=40, stop=[stop]))
    assert chunks[-1].finish_reason == "stop"
    assert text == full[: full.index(stop)]


def test_same_seed_same_sample(engine: LlamaCppEngine) -> None:
    sampled = params("Invent a name for a cat.", temperature=0.9, seed=42, max_tokens=24)
    assert run(engine, sampled)[0] == run(engine, sampled)[0]


def test_prompt_over_the_context_is_refused_before_any_token() -> None:
    small = LlamaCppEngine(EngineConfig(model_path=model_path(), context_token_limit=32))
    small.load()
    with pytest.raises(ContextOverflow, match="shorten"):
        small.generate(params("word " * 100))


def test_closing_the_stream_stops_generation(engine: LlamaCppEngine) -> None:
    stream = engine.generate(params("Count to one hundred.", max_tokens=500))
    first = [next(stream) for _ in range(3)]
    stream.close()  # type: ignore[attr-defined]
    assert all(isinstance(c, TokenChunk) for c in first)
    text, _ = run(engine, params(temperature=0.0, max_tokens=8))
    assert text
