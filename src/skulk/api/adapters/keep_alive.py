"""`keep_alive`, as Ollama spells it (and the other dialects may, as an extension): how
long the model stays placed after the request with nothing to do."""

import math
import re

from skulk.api.errors import ApiError
from skulk.shared.types.tasks import MAX_KEEP_ALIVE_SECONDS

_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h)")

KEEP_ALIVE_DESCRIPTION = (
    "How long the model stays placed after this request with nothing to do: seconds, or a "
    "duration such as `5m` or `1h30m`; 0 removes it once idle, a negative value keeps it "
    "for ever. Absent: the cluster's default (`--keep-alive`).")


def keep_alive_seconds(value: str | float | None) -> float | None:
    """Seconds (negative: for ever), or None when absent; a bad value is a 400."""
    if value is None:
        return None
    seconds = _parse(value)
    if seconds is None or not math.isfinite(seconds):
        raise ApiError(400, f"keep_alive {value!r} is not a duration: give seconds or e.g. "
                       "'5m', '1h30m', '-1'", param="keep_alive")
    if seconds < 0:
        return -1.0
    return min(seconds, MAX_KEEP_ALIVE_SECONDS)


def _parse(value: str | float) -> float | None:
    if isinstance(value, int | float):
        return float(value)
    text = value.strip()
    try:
        return float(text)
    except ValueError:
        pass
    negative = text.startswith("-")
    body = text.removeprefix("-")
    parts = _DURATION.findall(body)
    if not parts or "".join(n + u for n, u in parts) != body:
        return None
    seconds = sum(float(number) * _UNITS[unit] for number, unit in parts)
    return -seconds if negative else seconds
