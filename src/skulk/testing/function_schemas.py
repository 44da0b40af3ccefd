"""Parameter schemas of the kind function-calling clients send (nested objects, enums,
bounded arrays, anyOf/oneOf, $ref/$defs, patterns, formats, closed objects, required
fields), for testing that constrained output validates on every engine."""

import json
from pathlib import Path
from typing import Any

import jsonschema

_FILE = Path(__file__).with_name("function_schemas.json")


def function_schemas() -> dict[str, dict[str, Any]]:
    """Name -> JSON Schema (each a tool's `parameters`)."""
    loaded: dict[str, dict[str, Any]] = json.loads(_FILE.read_text())
    return loaded


def validate_answer(schema: dict[str, Any], text: str) -> None:
    """Raise unless `text` is JSON that satisfies `schema`, formats included."""
    checker = jsonschema.Draft202012Validator.FORMAT_CHECKER
    jsonschema.Draft202012Validator(schema, format_checker=checker).validate(json.loads(text))
