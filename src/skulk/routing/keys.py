"""Key-expression matching with Zenoh's wildcards, for the in-memory transport."""


def key_matches(key_expr: str, key: str) -> bool:
    """Whether `key` matches `key_expr`: `*` is one chunk, `**` zero or more chunks."""
    return _match(key_expr.split("/"), key.split("/"))


def _match(pattern: list[str], chunks: list[str]) -> bool:
    if not pattern:
        return not chunks
    head, rest = pattern[0], pattern[1:]
    if head == "**":
        return any(_match(rest, chunks[i:]) for i in range(len(chunks) + 1))
    if not chunks:
        return False
    return (head == "*" or head == chunks[0]) and _match(rest, chunks[1:])
