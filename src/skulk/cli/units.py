"""Sizes and layer ranges as every `skulk` command prints them, the same way the dashboard
shows them: binary units (MiB, GiB) and layers as the inclusive range people count."""

UNITS = ("B", "KiB", "MiB", "GiB", "TiB")


def size_text(size_bytes: float) -> str:
    """`93.8 MiB`, `22.8 GiB`: three significant digits at most, as the dashboard shows."""
    value, unit = max(float(size_bytes), 0.0), 0
    while value >= 1024 and unit < len(UNITS) - 1:
        value /= 1024
        unit += 1
    digits = 0 if unit == 0 or value >= 100 else 1 if value >= 10 else 2
    return f"{value:.{digits}f} {UNITS[unit]}"


def layers_text(start: int, end: int) -> str:
    """Layers `start` to `end - 1` (the wire's end is exclusive): `layers 0–14`, `layer 3`."""
    return f"layer {start}" if end - start == 1 else f"layers {start}–{end - 1}"
