import json
from pathlib import Path

import numpy as np
import pytest

from skulk.testing.function_schemas import function_schemas, validate_answer
from skulk.testing.tiny_model import write_tiny_model
from skulk.worker.engines.grammar.compile import GrammarRefused, compile_json_schema
from skulk.worker.engines.grammar.constraint import Constraint, GrammarBroken
from skulk.worker.engines.grammar.vocabulary import Vocabulary

BUDGET = 96


@pytest.fixture(scope="module")
def vocabulary(tmp_path_factory: pytest.TempPathFactory) -> Vocabulary:
    model = write_tiny_model(tmp_path_factory.mktemp("tiny"))
    config = json.loads((model / "config.json").read_text())
    return Vocabulary.of_tokenizer_json(Path(model / "tokenizer.json"), config["vocab_size"],
                                        [config["eos_token_id"]])


def random_answer(vocabulary: Vocabulary, grammar: str, budget: int, seed: int) -> list[int]:
    """What a model choosing uniformly among the allowed tokens says within `budget`."""
    generator = np.random.default_rng(seed)
    constraint = Constraint(vocabulary, grammar)
    tokens: list[int] = []
    for step in range(budget):
        token = constraint.forced()
        if token is None:
            choice = int(generator.choice(np.flatnonzero(constraint.allowed())))
            token = constraint.vetted(choice, budget - step)
        if token in vocabulary.eos_token_ids:
            break
        constraint.advance([token])
        tokens.append(token)
    return tokens


def test_random_choices_under_the_mask_close_valid_json_within_the_budget(
        vocabulary: Vocabulary) -> None:
    schemas = function_schemas()
    assert len(schemas) >= 30
    for name, schema in schemas.items():
        tokens = random_answer(vocabulary, compile_json_schema(json.dumps(schema)), BUDGET,
                               seed=len(name))
        assert len(tokens) <= BUDGET
        validate_answer(schema, vocabulary.tokenizer.decode_str(tokens))


def test_masks_along_a_draft_are_the_masks_step_by_step(vocabulary: Vocabulary) -> None:
    grammar = compile_json_schema(json.dumps(function_schemas()["get_weather"]))
    text = vocabulary.tokenizer.tokenize_str('{"location":"Paris","unit":"celsius"}')
    along = Constraint(vocabulary, grammar).allowed_along(text[:6])
    stepwise = Constraint(vocabulary, grammar)
    for index, mask in enumerate(along):
        assert np.array_equal(mask, stepwise.allowed())
        if index < 6:
            stepwise.advance([text[index]])
    assert Constraint(vocabulary, grammar).allowed_prefix([*text[:3], text[0]]) == 3


def test_a_constraint_resumes_after_the_tokens_already_sent(vocabulary: Vocabulary) -> None:
    grammar = compile_json_schema(json.dumps(function_schemas()["get_weather"]))
    sent = vocabulary.tokenizer.tokenize_str('{"location":"Par')
    resumed = Constraint(vocabulary, grammar, already=sent)
    fresh = Constraint(vocabulary, grammar)
    fresh.advance(sent)
    assert np.array_equal(resumed.allowed(), fresh.allowed())
    with pytest.raises(GrammarBroken, match="do not follow"):
        Constraint(vocabulary, grammar, already=vocabulary.tokenizer.tokenize_str("[1]"))


def test_schemas_that_cannot_be_enforced_are_refused_with_why() -> None:
    with pytest.raises(GrammarRefused, match="not JSON"):
        compile_json_schema("{")
    with pytest.raises(GrammarRefused, match="strin"):
        compile_json_schema('{"type": "strin"}')
    with pytest.raises(GrammarRefused, match="uniqueItems"):
        compile_json_schema('{"type": "array", "uniqueItems": true}')
    compile_json_schema('{"type": "array", "uniqueItems": false}')


def test_a_string_admits_no_raw_control_character(vocabulary: Vocabulary) -> None:
    grammar = compile_json_schema('{"type": "object", "properties": {"a": {"type": "string"}}}')
    constraint = Constraint(vocabulary, grammar,
                            already=vocabulary.tokenizer.tokenize_str('{"a":"x'))
    [newline] = vocabulary.tokenizer.tokenize_str("\n")
    assert not constraint.allowed()[newline]


def test_a_token_the_grammar_rejects_raises_grammar_broken(vocabulary: Vocabulary) -> None:
    grammar = compile_json_schema(json.dumps(function_schemas()["get_weather"]))
    constraint = Constraint(vocabulary, grammar)
    [bracket] = vocabulary.tokenizer.tokenize_str("[")
    assert not constraint.allowed()[bracket]
    with pytest.raises(GrammarBroken, match="broke the request's grammar"):
        constraint.advance([bracket])


def test_a_schema_longer_than_the_budget_runs_to_the_budget_not_to_an_early_end(
        vocabulary: Vocabulary) -> None:
    # Three required keys cannot be written in 4 tokens: nothing is forced (no early
    # end-of-generation, which the dialects would report as "stop" with an empty answer),
    # so the answer runs out of budget and finishes with "length".
    schema = {"type": "object", "required": ["first_long_field", "second_long_field",
                                             "third_long_field"],
              "properties": {name: {"type": "string"} for name in
                             ("first_long_field", "second_long_field", "third_long_field")}}
    grammar = compile_json_schema(json.dumps(schema))
    tokens = random_answer(vocabulary, grammar, 4, seed=1)
    assert len(tokens) == 4
    assert vocabulary.tokenizer.decode_str(tokens).startswith("{")


def test_a_closing_strategy_that_breaks_leaves_the_budget_to_cut_the_answer(
        vocabulary: Vocabulary, monkeypatch: pytest.MonkeyPatch) -> None:
    # A fault of the strategy (it raises) must not end the runner's step for every request
    # in the batch: the answer goes on unplanned, every token still under the mask.
    calls: list[int] = []

    def broken(*args: object) -> list[int]:
        calls.append(1)
        raise RuntimeError("the closing strategy broke the grammar")

    monkeypatch.setattr("skulk.worker.engines.grammar.constraint.closing_path", broken)
    grammar = compile_json_schema(json.dumps({"type": "object"}))
    tokens = random_answer(vocabulary, grammar, 6, seed=3)
    assert calls, "the strategy was never asked"
    assert 1 <= len(tokens) <= 6
    assert vocabulary.tokenizer.decode_str(tokens).startswith("{")
