"""The record format: a 4-byte big-endian length, then one msgpack `IndexedEvent`."""

import struct
from dataclasses import dataclass

from skulk.shared.types.events import IndexedEvent
from skulk.shared.types.wire import from_msgpack, to_msgpack

_LENGTH = struct.Struct(">I")


def encode_record(event: IndexedEvent) -> bytes:
    body = to_msgpack(event)
    return _LENGTH.pack(len(body)) + body


@dataclass(frozen=True)
class DecodedLog:
    events: list[IndexedEvent]
    corrupt: int  # whole records that did not decode, skipped
    torn_bytes: int  # a last record cut short by a crash mid-write, ignored


def decode_log(data: bytes) -> DecodedLog:
    """Every whole record in `data`. A record that does not decode is skipped and counted,
    so one damaged record costs that event, not the log."""
    events = []
    corrupt = 0
    offset = 0
    while offset + _LENGTH.size <= len(data):
        (length,) = _LENGTH.unpack_from(data, offset)
        start = offset + _LENGTH.size
        if start + length > len(data):
            break
        try:
            events.append(from_msgpack(IndexedEvent, data[start:start + length]))
        except ValueError:
            corrupt += 1
        offset = start + length
    return DecodedLog(events=events, corrupt=corrupt, torn_bytes=len(data) - offset)


def decode_records(data: bytes) -> list[IndexedEvent]:
    """The events of `decode_log`."""
    return decode_log(data).events
