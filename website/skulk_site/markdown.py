"""Small Markdown builders shared by the generated reference pages."""

from collections.abc import Sequence


def cell(text: object) -> str:
    """A table cell: one line, pipes escaped."""
    return " ".join(str(text).split()).replace("|", "\\|")


def table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> list[str]:
    """A Markdown table as lines (nothing at all when there are no rows)."""
    if not rows:
        return []
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines.extend("| " + " | ".join(cell(value) for value in row) + " |" for row in rows)
    return lines


def anchor(text: str) -> str:
    """The id MkDocs' toc extension gives a heading of `text` (its default slugify)."""
    kept = "".join(c for c in text.lower() if c.isalnum() or c in " -_")
    return "-".join(kept.split())
