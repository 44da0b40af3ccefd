"""How many of the decoding requests one step decodes: as many as cost least per token,
by this machine's own measured steps.

Batching is not always cheaper per token. On a GPU, or on a CPU with several compute
threads, a step of 8 tokens costs little more than a step of one. On one CPU thread a step
of 2 to 4 tokens costs more per token than a step of one: llama.cpp takes other matrix
kernels for more than one column, slower per column here (bench/history/serving-path.md,
"Batching on one thread"). So the width of a decode step is measured, not assumed.

Each candidate width (all the decoding requests, and each power of two below) is first
timed over a few decode-only steps, widest first. From then on, every `PROBE_EVERY` steps
two steps are timed back to back: one of the chosen width, then one of another candidate
in turn. Each width's figure is the median seconds per token of its last `WINDOW` timed
steps, so every figure is made over the same stretch of time: a step's attention grows
with its context, and a machine's load comes and goes, and neither then favours the width
timed most recently. A width far dearer than the best is timed only now and then (a GPU is
rarely asked to decode its requests one at a time). The requests take turns, the one fed
longest ago first, so none waits more than a few steps.
"""

import statistics
from collections import deque
from dataclasses import dataclass, field

FIRST_SAMPLES = 3
"""Steps each width is timed before it competes (the median of three: one step that
waited for another process does not decide)."""
WINDOW = 7
"""Timed steps per width its figure is the median of."""
PROBE_EVERY = 32
"""Steps between two timed pairs: the chosen width's step, then another width's."""
FAR_WORSE = 1.5
"""A width this many times dearer per token than the best wider one is far worse: once
two of its steps say so, no narrower width is timed, and it is timed again only every
`RETRY_FAR_WORSE`-th pair."""
RETRY_FAR_WORSE = 8


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
    """Seconds per token of timed decode-only steps, by width, and the choice they make."""

    probe_every: int = PROBE_EVERY
    _samples: dict[int, deque[float]] = field(default_factory=dict)
    _figures: dict[int, float] = field(default_factory=dict)  # `per_token`, kept by `record`
    _steps: int = 0
    _probes: int = 0
    _turn: int = 0  # which of the other widths a pair times next
    _timed: bool = False  # whether the step just chosen is to be timed

    def choose(self, decoding: int) -> int:
        """This step's width among `decoding` requests."""
        self._steps += 1
        self._timed = True
        widths = candidate_widths(decoding)
        figures = self._figures  # read every step: made only when a timed step comes in
        best: float | None = None
        blocked: int | None = None  # a width whose first steps were far worse
        for width in widths:  # widest first: a fresh engine batches as it always did
            if width not in figures:
                if best is not None and self._far_worse_so_far(width, best):
                    blocked = width
                    break
                return width
            if best is not None and figures[width] > FAR_WORSE * best:
                break  # narrower widths would be worse still: not timed at all
            best = figures[width] if best is None else min(best, figures[width])
        competing = [width for width in widths if width in figures]
        cheapest = min(competing, key=lambda width: (figures[width], -width))
        phase = self._steps % self.probe_every
        if phase == 0:
            return cheapest  # the pair's first step: the chosen width, timed
        if phase == 1 and self._steps > 1:
            return self._probe(competing, cheapest, figures, blocked)
        self._timed = False
        return cheapest

    def _far_worse_so_far(self, width: int, best: float) -> bool:
        """`width` is being timed for the first time and two steps say it is far worse."""
        samples = self._samples.get(width, ())
        return len(samples) >= 2 and min(samples) > FAR_WORSE * best

    def _probe(self, competing: list[int], cheapest: int, figures: dict[int, float],
               blocked: int | None) -> int:
        """The other width the pair times: each in turn, a far worse one only every
        `RETRY_FAR_WORSE`-th pair (then first a width whose first steps were far worse,
        until it has a figure: two preempted steps do not rule it out for good)."""
        self._probes += 1
        retry = self._probes % RETRY_FAR_WORSE == 0
        if retry and blocked is not None:
            return blocked
        others = [width for width in competing if width != cheapest and
                  (figures[width] <= FAR_WORSE * figures[cheapest] or retry)]
        if not others:
            self._timed = False
            return cheapest
        self._turn += 1
        return others[self._turn % len(others)]

    def record(self, width: int, seconds: float) -> None:
        """The step just chosen decoded `width` tokens only, in `seconds`."""
        if not self._timed:
            return
        self._timed = False
        samples = self._samples.setdefault(width, deque(maxlen=WINDOW))
        samples.append(seconds / width)
        if len(samples) >= FIRST_SAMPLES:
            self._figures[width] = statistics.median(samples)

    def per_token(self) -> dict[int, float]:
        """The figure of each width timed at least `FIRST_SAMPLES` times: the median
        seconds per token of its last `WINDOW` timed steps."""
        return dict(self._figures)
