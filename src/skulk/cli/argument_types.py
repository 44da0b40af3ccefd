"""argparse types for every number a `skulk` command takes: a bad value is refused while
parsing, with one line naming the flag and what it takes, before anything starts."""

import argparse
import math
from collections.abc import Callable

MAX_PORT = 65535


def _integer(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None


def _number(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"{text!r} is not a finite number")
    return value


def whole_number(text: str) -> int:
    """A whole number, zero or more."""
    value = _integer(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"{value} is negative; give 0 or more")
    return value


def positive_int(text: str) -> int:
    """A whole number, one or more."""
    value = _integer(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is too small; give 1 or more")
    return value


def port(text: str) -> int:
    """A TCP port to bind or reach: 1 to 65535."""
    value = _integer(text)
    if not 1 <= value <= MAX_PORT:
        raise argparse.ArgumentTypeError(f"{value} is not a port; give 1 to {MAX_PORT}")
    return value


def port_or_any(text: str) -> int:
    """A TCP port to bind, or 0 for any free one."""
    value = _integer(text)
    if not 0 <= value <= MAX_PORT:
        raise argparse.ArgumentTypeError(
            f"{value} is not a port; give 1 to {MAX_PORT}, or 0 for any free port")
    return value


def positive_number(text: str) -> float:
    """A finite number above zero (seconds, GiB, MiB)."""
    value = _number(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{text} is not above 0")
    return value


def non_negative_number(text: str) -> float:
    """A finite number, zero or more."""
    value = _number(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text} is negative; give 0 or more")
    return value


def finite_number(text: str) -> float:
    """Any finite number (a negative one may mean 'never', as `--keep-alive` takes it)."""
    return _number(text)


def at_most(limit: float, kind: Callable[[str], float]) -> Callable[[str], float]:
    """`kind`, also refusing values above `limit`."""
    def bounded(text: str) -> float:
        value = kind(text)
        if value > limit:
            raise argparse.ArgumentTypeError(f"{text} is above {limit:g}")
        return value
    bounded.__name__ = kind.__name__  # argparse names the type in its messages
    return bounded
