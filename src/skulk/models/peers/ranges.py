"""HTTP byte ranges (RFC 9110 §14): the one form a resuming download sends, parsed purely."""

import re
from dataclasses import dataclass

_SINGLE_RANGE = re.compile(r"bytes=(\d*)-(\d*)")


class RangeNotSatisfiable(ValueError):
    """The range starts at or past the end of the file (answered with 416)."""


@dataclass(frozen=True)
class ByteRange:
    """Bytes `start` to `end` inclusive of a file of `size` bytes; `partial` when a range
    was asked for (answered with 206), else the whole file (200)."""

    start: int
    end: int
    size: int
    partial: bool

    @property
    def length(self) -> int:
        return self.end - self.start + 1

    @property
    def content_range(self) -> str:
        return f"bytes {self.start}-{self.end}/{self.size}"


def parse_range(header: str | None, size: int) -> ByteRange:
    """The bytes to send for a `Range` header. A header this server does not understand
    (several ranges, another unit, bad syntax) is ignored and the whole file sent, as the
    RFC allows; a range past the end raises RangeNotSatisfiable."""
    whole = ByteRange(0, size - 1, size, partial=False)
    match = _SINGLE_RANGE.fullmatch(header.strip()) if header is not None else None
    if match is None or match.group(1) == match.group(2) == "":
        return whole
    first, last = match.group(1), match.group(2)
    if first == "":  # `bytes=-N`: the last N bytes
        suffix = int(last)
        if suffix == 0:
            raise RangeNotSatisfiable(f"an empty suffix range of a {size}-byte file")
        return ByteRange(max(size - suffix, 0), size - 1, size, partial=True)
    start = int(first)
    end = size - 1 if last == "" else min(int(last), size - 1)
    if start >= size:
        raise RangeNotSatisfiable(f"bytes from {start} of a {size}-byte file")
    if end < start:
        return whole
    return ByteRange(start, end, size, partial=True)
