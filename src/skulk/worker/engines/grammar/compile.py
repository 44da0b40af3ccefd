"""The grammar a request's output must follow, compiled once and checked before it runs.

Both engines read the same compiled grammar, so a schema means the same thing on either:
whitespace between JSON tokens is not allowed (a model cannot spend its budget on it) and
a schema keyword llguidance does not implement refuses the request instead of being
ignored, so every answer validates against the schema the client sent.
"""

import json
from typing import Any

import llguidance

from skulk.shared.types.tasks import GenerationParams

# Compact JSON: "," and ":" with nothing around them.
_JSON_OPTIONS: Any = {"whitespace_flexible": False}
ANY_OBJECT = '{"type": "object"}'


class GrammarRefused(ValueError):
    """The requested output cannot be enforced; the message says why."""


def grammar_for(params: GenerationParams) -> str | None:
    """The llguidance grammar of the request's output, or None for free text."""
    if params.output == "text":
        return None
    schema = params.json_schema if params.json_schema is not None else ANY_OBJECT
    return compile_json_schema(schema)


def compile_json_schema(schema: str) -> str:
    """The grammar of JSON satisfying `schema` (JSON text); raises GrammarRefused."""
    try:
        parsed = json.loads(schema)
    except json.JSONDecodeError as error:
        raise GrammarRefused(f"the JSON schema is not JSON: {error}") from error
    if not isinstance(parsed, dict):
        raise GrammarRefused("the JSON schema must be a JSON object")
    try:
        grammar = llguidance.LLMatcher.grammar_from_json_schema(_without_no_ops(parsed),
                                                                overrides=_JSON_OPTIONS)
    except ValueError as error:
        raise GrammarRefused(f"the JSON schema cannot be compiled: {error}") from error
    problem = llguidance.LLMatcher.validate_grammar(grammar)
    if problem:
        raise GrammarRefused(f"the JSON schema cannot be enforced: {problem}")
    return grammar


def _without_no_ops(schema: dict[str, Any]) -> dict[str, Any]:
    cleaned = _cleaned(schema)
    assert isinstance(cleaned, dict)
    return cleaned


def _cleaned(schema: object) -> object:
    """The schema less keywords that constrain nothing but that llguidance would refuse
    as unimplemented (`uniqueItems: false`, which clients send as a default)."""
    if isinstance(schema, list):
        return [_cleaned(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    return {key: _cleaned(value) for key, value in schema.items()
            if not (key == "uniqueItems" and value is False)}
