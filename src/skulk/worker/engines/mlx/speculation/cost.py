"""What a forward pass costs as a function of how many tokens it verifies.

The loop times every one-row step; this keeps a running average per token count and
fits a line through them: one-token cost plus a slope per extra token (a least-squares
slope through the one-token point, each count weighted by how often it was seen, up to a
cap). A line is far steadier than per-count averages on a CPU shared with other work.
Nothing is estimated before a one-token step has been timed, so the loop asks for one
before any drafting round (otherwise a fresh engine's first request would draft blind,
and a draft model slower than its target would be used for dozens of rounds), and again
when the last one is old: load on the machine changes what a step costs, and a drafter
that always drafts would otherwise be judged against a stale figure.
"""

from dataclasses import dataclass, field

SMOOTHING = 0.3  # weight of the newest observation in a count's running average
WEIGHT_CAP = 8
# Before any multi-token step is timed: each extra verified token costs this fraction of
# a one-token step (measured ~0.2-0.4 for the bundled model on 2 CPU cores).
PRIOR_SLOPE = 0.3
LEAST_SLOPE = 0.02
REFRESH_ROUNDS = 32  # multi-token steps after which a one-token step is timed again


@dataclass
class ForwardCost:
    _seconds: dict[int, float] = field(default_factory=dict)
    _seen: dict[int, int] = field(default_factory=dict)
    _since_one_token: int = 0

    @property
    def wants_one_token_step(self) -> bool:
        """True when there is no one-token figure yet, or it is old (see the module doc)."""
        return 1 not in self._seconds or self._since_one_token >= REFRESH_ROUNDS

    def observe(self, tokens: int, seconds: float) -> None:
        self._since_one_token = 0 if tokens == 1 else self._since_one_token + 1
        known = self._seconds.get(tokens)
        self._seconds[tokens] = seconds if known is None else (
            known + SMOOTHING * (seconds - known))
        self._seen[tokens] = self._seen.get(tokens, 0) + 1

    def estimate(self, tokens: int) -> float | None:
        """Seconds for a forward pass over `tokens` tokens, or None while unknown."""
        base = self._seconds.get(1)
        if base is None:
            return None
        return base + self.slope() * (tokens - 1)

    def slope(self) -> float:
        """Seconds each extra verified token adds (0 before a one-token step is timed)."""
        base = self._seconds.get(1)
        if base is None:
            return 0.0
        numerator = denominator = 0.0
        for tokens, seconds in self._seconds.items():
            if tokens > 1:
                weight = min(self._seen[tokens], WEIGHT_CAP)
                numerator += weight * (seconds - base) * (tokens - 1)
                denominator += weight * (tokens - 1) ** 2
        if denominator == 0.0:
            return PRIOR_SLOPE * base
        return max(numerator / denominator, LEAST_SLOPE * base)
