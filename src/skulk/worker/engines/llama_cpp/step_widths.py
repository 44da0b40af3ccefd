"""How many of the decoding requests one step decodes: as many as cost least per token,
by this machine's own measured steps.

Batching is not always cheaper per token. On a GPU, or on a CPU with several compute
threads, a step of 8 tokens costs little more than a step of one. On one CPU thread a step
of 2 to 6 tokens can cost more per token than a step of one: llama.cpp takes another
matrix kernel for more than one column (tinyBLAS for the Q8_0 output layer), and its small
batches are slower per column than its single-column one (bench/README.md, "Batching on
one thread"). So the width of a decode step is measured, not assumed: each candidate width
is tried a few times, then the cheapest per token is taken, and one width is measured
again every so often so that the figures follow the machine. The requests take turns
(the one fed longest ago first), so no request waits more than a few steps.
"""

from dataclasses import dataclass, field

SAMPLES_TO_TRUST = 3
"""Steps a width is measured before its figure counts, the fastest of them its first
figure: a step can wait for another process, never run faster than it can."""
RECHECK_STEPS = 256
"""Steps between two re-measures of the width measured longest ago."""
SMOOTHING = 0.2
"""Weight of a new step in a width's running figure (an exponential moving average)."""
OUTLIER = 1.5
"""A step counts as at most this many times its width's running figure: a step that
waited for another process moves the figure by a tenth, not by its whole wait."""


def candidate_widths(decoding: int) -> list[int]:
    """The widths worth measuring among `decoding` requests, widest first: all of them,
    and each power of two below (so that 64 requests measure 7 widths, not 64)."""
    if decoding < 1:
        raise ValueError(f"a step decodes at least one request, not {decoding}")
    widths = {decoding}
    width = 1
    while width < decoding:
        widths.add(width)
        width *= 2
    return sorted(widths, reverse=True)


@dataclass
class StepWidths:
    """Seconds per token of decode-only steps, by width, and the choice they make."""

    recheck_steps: int = RECHECK_STEPS
    _per_token: dict[int, float] = field(default_factory=dict)
    _samples: dict[int, int] = field(default_factory=dict)
    _measured_at: dict[int, int] = field(default_factory=dict)
    _steps: int = 0

    def choose(self, decoding: int) -> int:
        """This step's width among `decoding` requests: a width not yet trusted (the
        widest first, so a fresh engine batches as it always did), else one due for a
        re-measure, else the cheapest per token (the wider on a tie)."""
        self._steps += 1
        widths = candidate_widths(decoding)
        for width in widths:
            if self._samples.get(width, 0) < SAMPLES_TO_TRUST:
                return width
        stalest = min(widths, key=lambda width: self._measured_at[width])
        if self._steps - self._measured_at[stalest] >= self.recheck_steps:
            return stalest
        return min(widths, key=lambda width: (self._per_token[width], -width))

    def record(self, width: int, seconds: float) -> None:
        """A decode-only step of `width` tokens took `seconds`."""
        per_token = seconds / width
        before = self._per_token.get(width)
        if before is None or self._samples[width] < SAMPLES_TO_TRUST:
            self._per_token[width] = min(per_token, before or per_token)
        else:
            per_token = min(per_token, OUTLIER * before)
            self._per_token[width] = before + SMOOTHING * (per_token - before)
        self._samples[width] = self._samples.get(width, 0) + 1
        self._measured_at[width] = self._steps

    def per_token(self) -> dict[int, float]:
        """Each measured width's running seconds per token (for logs and benchmarks)."""
        return dict(self._per_token)
