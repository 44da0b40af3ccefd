"""The schema set on the bundled SmolLM2 GGUF: llama.cpp samples under the same llguidance
masks as the mlx engine, so every answer validates against its schema (formats, bounds,
patterns included), which llama.cpp's own JSON-schema-to-GBNF conversion did not give."""

import json
from collections.abc import Iterator

import pytest

from skulk.testing.function_schemas import function_schemas, validate_answer
from skulk.worker.engines.llama_cpp.engine import LlamaCppEngine
from skulk.worker.engines.llama_cpp.engine_test import THREADS, model_path, params
from skulk.worker.engines.protocol import EngineConfig

pytestmark = pytest.mark.integration

# Small, so the run stays seconds per schema: the grammar closes the answer in time.
MAX_TOKENS = 64


@pytest.fixture(scope="module")
def engine() -> Iterator[LlamaCppEngine]:
    loaded = LlamaCppEngine(EngineConfig(model_path=model_path(), context_token_limit=1024,
                                         n_threads=THREADS))
    loaded.load()
    yield loaded


def test_every_answer_of_the_schema_set_validates(engine: LlamaCppEngine) -> None:
    for name, schema in function_schemas().items():
        chunks = list(engine.generate(params(
            f"Call {name} with sensible arguments.", temperature=0.0, max_tokens=MAX_TOKENS,
            output="json", json_schema=json.dumps(schema))))
        assert len([t for c in chunks for t in c.token_ids]) <= MAX_TOKENS
        validate_answer(schema, "".join(c.text for c in chunks))


def test_a_sampled_answer_under_a_schema_validates_too(engine: LlamaCppEngine) -> None:
    schema = function_schemas()["book_flight"]
    for seed in range(3):
        chunks = list(engine.generate(params(
            "Book a flight.", temperature=1.0, seed=seed, max_tokens=MAX_TOKENS,
            output="json", json_schema=json.dumps(schema))))
        validate_answer(schema, "".join(c.text for c in chunks))
