"""The base every wire type derives from: frozen, strict, unknown fields rejected.

Wire types use `Literal` tags and plain containers (no enums, no datetimes) so that
the same strict validation accepts both a JSON document and a decoded msgpack map.
"""

from pydantic import BaseModel, ConfigDict


class WireModel(BaseModel):
    """A frozen, strict value that crosses a process or node boundary."""

    model_config = ConfigDict(frozen=True, strict=True, extra="forbid")
