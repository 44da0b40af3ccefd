"""Key expressions with Zenoh's chunk wildcards (`*`, `**`); `$*` is not supported."""

_RESERVED = frozenset("/*$?#")


def key_matches(key_expr: str, key: str) -> bool:
    """Whether `key` matches `key_expr`: `*` is one chunk, `**` zero or more chunks."""
    return _match(tuple(key_expr.split("/")), tuple(key.split("/")))


def _match(pattern: tuple[str, ...], chunks: tuple[str, ...]) -> bool:
    if not pattern:
        return not chunks
    head, rest = pattern[0], pattern[1:]
    if head == "**":
        return any(_match(rest, chunks[start:]) for start in range(len(chunks) + 1))
    if not chunks:
        return False
    return head in ("*", chunks[0]) and _match(rest, chunks[1:])


def check_chunk(chunk: str) -> str:
    """Return `chunk` if it can stand as one concrete key chunk, else raise `ValueError`."""
    if not chunk or not _RESERVED.isdisjoint(chunk):
        raise ValueError(
            f"{chunk!r} cannot be a key chunk: it must be non-empty and free of / * $ ? #")
    return chunk
