"""Encoding of wire types as msgpack (between nodes and processes) and JSON.

Decoding is the edge where a peer's bytes become values, so it refuses, before any model
sees them, what no wire type needs: payloads over `MAX_PAYLOAD_BYTES`, nesting deeper than
`MAX_DEPTH`, and integers outside ±`MAX_WIRE_INT`. Every integer a node later does
arithmetic on and sends again (an election round + 1, an index + 1) then still encodes.
"""

from typing import Any, TypeVar

import msgpack
from pydantic import BaseModel

M = TypeVar("M", bound=BaseModel)

# A whole State snapshot is the largest message; 64 MiB is far beyond any real one.
MAX_PAYLOAD_BYTES = 64 << 20
MAX_DEPTH = 64
# 2**53: exact in a double, so JSON readers (the dashboard) see the same number.
MAX_WIRE_INT = 1 << 53


def to_msgpack(value: BaseModel) -> bytes:
    packed: bytes = msgpack.packb(value.model_dump(mode="json"), use_bin_type=True)
    return packed


def from_msgpack(model: type[M], payload: bytes) -> M:
    """Decode and validate; raises `ValueError` on anything that is not a `model`."""
    if len(payload) > MAX_PAYLOAD_BYTES:
        raise ValueError(f"payload of {len(payload)} bytes exceeds {MAX_PAYLOAD_BYTES}")
    try:
        raw = msgpack.unpackb(payload, raw=False, strict_map_key=True)
    except Exception as error:  # msgpack raises several unrelated types
        raise ValueError(f"not a msgpack document: {type(error).__name__}") from error
    check_plain(raw)
    return model.model_validate(raw)


def check_plain(document: Any, depth: int = 0) -> None:
    """Raise `ValueError` if `document` nests too deep or holds an out-of-range integer.

    Called on every message a node receives, so the walk dispatches on exact types and
    steps over the leaves that need no check (strings, floats, None) without a call."""
    if depth > MAX_DEPTH:
        raise ValueError(f"nested deeper than {MAX_DEPTH}")
    kind = type(document)
    if kind is dict:
        for key, item in document.items():
            if type(key) is not str:
                check_plain(key, depth + 1)
            _check_item(item, depth + 1)
    elif kind is list:
        for item in document:
            _check_item(item, depth + 1)
    else:
        _check_item(document, depth)


def _check_item(item: Any, depth: int) -> None:
    if depth > MAX_DEPTH:
        raise ValueError(f"nested deeper than {MAX_DEPTH}")
    kind = type(item)
    if kind is str or kind is float or item is None or kind is bool:
        return
    if kind is dict or kind is list:
        check_plain(item, depth)
    elif isinstance(item, bool):
        return
    elif isinstance(item, int):
        if not -MAX_WIRE_INT <= item <= MAX_WIRE_INT:
            raise ValueError(f"integer {item} is outside ±2**53")
    elif isinstance(item, list | dict):
        check_plain(item, depth)
