"""The record format: a 4-byte big-endian length, then one msgpack `IndexedEvent`."""

import struct

from skulk.shared.types.events import IndexedEvent
from skulk.shared.types.wire import from_msgpack, to_msgpack

_LENGTH = struct.Struct(">I")


def encode_record(event: IndexedEvent) -> bytes:
    body = to_msgpack(event)
    return _LENGTH.pack(len(body)) + body


def decode_records(data: bytes) -> list[IndexedEvent]:
    """Every whole record in `data`; a truncated last record (a crash mid-write) is ignored."""
    events = []
    offset = 0
    while offset + _LENGTH.size <= len(data):
        (length,) = _LENGTH.unpack_from(data, offset)
        start = offset + _LENGTH.size
        if start + length > len(data):
            break
        events.append(from_msgpack(IndexedEvent, data[start:start + length]))
        offset = start + length
    return events
