"""Encoding of wire types as msgpack (between nodes and processes) and JSON."""

from typing import TypeVar

import msgpack
from pydantic import BaseModel

M = TypeVar("M", bound=BaseModel)


def to_msgpack(value: BaseModel) -> bytes:
    packed: bytes = msgpack.packb(value.model_dump(mode="json"), use_bin_type=True)
    return packed


def from_msgpack(model: type[M], payload: bytes) -> M:
    """Decode and validate; raises `ValueError` on anything that is not a `model`."""
    try:
        raw = msgpack.unpackb(payload, raw=False)
    except Exception as error:  # msgpack raises several unrelated types
        raise ValueError(f"not a msgpack document: {error}") from error
    return model.model_validate(raw)
