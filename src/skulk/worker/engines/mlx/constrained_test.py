"""The MLX engine on a tiny random-weight Llama under a grammar and asked for log
probabilities: every answer of the schema set validates, drafting leaves greedy output
under a grammar as it is, a constrained answer resumes after tokens already sent, and
each token's log probability comes with its likeliest alternatives."""

import json

import numpy as np

from skulk.shared.types.chunks import TokenChunk
from skulk.testing.function_schemas import function_schemas, validate_answer
from skulk.worker.engines.mlx.conftest import EngineFactory
from skulk.worker.engines.mlx.engine_test import (
    _decode,
    chunks_in,
    done,
    params,
    run_batch,
    tokens_of,
)

# Enough for the closing strategy to finish every schema of the set with the tiny
# tokenizer (mostly one byte per token).
BUDGET = 128
WEATHER = '{"location":"Paris","unit":"celsius"}'


def text_of(chunks: list[TokenChunk]) -> str:
    return "".join(c.text for c in chunks)


def test_every_schema_of_the_set_gets_a_valid_answer_from_a_random_model(
        make_engine: EngineFactory) -> None:
    engine = make_engine(max_batch="8")
    schemas = function_schemas()
    requests = {name: params(f"Call {name}.", max_tokens=BUDGET, output="json",
                             json_schema=json.dumps(schema), temperature=1.0, seed=7)
                for name, schema in schemas.items()}
    events = run_batch(engine, requests)
    assert len(events["largest batch"]) > 1, "the answers were decoded batched"
    for name, schema in schemas.items():
        assert done(events[name]).status == "complete"
        validate_answer(schema, text_of(chunks_in(events[name])))


def test_any_json_object_when_no_schema_is_given(make_engine: EngineFactory) -> None:
    chunks = list(make_engine().generate(params("Hi", max_tokens=BUDGET, output="json")))
    assert isinstance(json.loads(text_of(chunks)), dict)


def test_greedy_output_under_a_grammar_is_the_same_with_and_without_drafting(
        make_engine: EngineFactory) -> None:
    schema = json.dumps(function_schemas()["get_weather"])
    # The prompt holds the answer's words, so the n-gram drafter has something to draft.
    ask = params(f"Answer like {WEATHER} or {WEATHER}", max_tokens=BUDGET * 2,
                 output="json", json_schema=schema)
    plain = list(make_engine(speculation="false").generate(ask))
    drafted = list(make_engine(draft_adaptive="false").generate(ask))
    assert tokens_of(drafted) == tokens_of(plain)
    usage = drafted[-1].usage
    assert usage is not None and usage.drafted_tokens > 0
    validate_answer(json.loads(schema), text_of(plain))


def test_a_constrained_answer_resumes_after_the_tokens_already_sent(
        make_engine: EngineFactory) -> None:
    engine = make_engine()
    schema = function_schemas()["book_flight"]
    ask = params("Book it.", max_tokens=BUDGET, output="json", json_schema=json.dumps(schema))
    whole = tokens_of(list(engine.generate(ask)))
    sent = whole[:9]
    rest = list(engine.generate(ask.model_copy(update={
        "continuation": sent, "max_tokens": BUDGET - len(sent)})))
    validate_answer(schema, _decode(engine, sent + tokens_of(rest)))


def test_log_probabilities_come_with_each_token_and_its_alternatives(
        make_engine: EngineFactory) -> None:
    chunks = list(make_engine().generate(params("Hello there", max_tokens=8, logprobs=3)))
    scored = [entry for chunk in chunks for entry in chunk.logprobs]
    assert len(scored) == len(tokens_of(chunks)) == 8
    for entry in scored:
        assert len(entry.top) == 3
        assert [t.logprob for t in entry.top] == sorted((t.logprob for t in entry.top),
                                                        reverse=True)
        # Greedy takes the likeliest token, so it is the first alternative.
        assert entry.logprob == entry.top[0].logprob and entry.bytes == entry.top[0].bytes
        assert entry.logprob <= 0.0 and np.exp([t.logprob for t in entry.top]).sum() <= 1.0
