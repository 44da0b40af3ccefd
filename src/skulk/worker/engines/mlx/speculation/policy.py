"""How long a draft to verify, per request: the length that maximises tokens per second.

For each draft position j the policy estimates a_j, the chance that the j-th drafted
token is kept given the ones before it were: of the recent rounds that reached position
j, the share that kept it (decayed, so the estimate follows the text: copied code, then
prose). k drafts then yield 1 + a_1 + a_1 a_2 + ... + a_1..a_k tokens a round, for the
cost of verifying k + 1 tokens plus drafting k. Per-position rates capture what a single
rate cannot: a prompt-lookup draft is often all right or wrong from its first token, so
a_1 is modest and later a_j are high. Estimates are kept separately for each kind of
evidence a drafter reports (an n-gram drafter's match length). The best length may be
0: drafting costs more than it saves and the round decodes plainly; a short probe
follows after a pause that doubles each time the probe confirms it.

A drafter whose time is negligible (prompt lookup) is always asked for the most tokens
and its draft is cut to the best length for its kind; a costly one (a draft model) is
asked only for what will be verified. A drafter so slow that even drafts always kept
would not pay (a draft model slower than its target) is not asked at all, not even for
probes: that verdict rests on costs alone, which no text changes, and a draft model's
probe after a pause is its costliest round (it first catches up on every token since).
"""

from dataclasses import dataclass, field

from skulk.worker.engines.mlx.speculation.cost import ForwardCost

DECAY = 0.9  # weight kept by older rounds in an acceptance estimate, per round
PRIOR_KEPT, PRIOR_REACHED = 0.67, 1.0  # every a_j starts at 2/3, one round's worth
UNSEEN = 0.5  # a position verified less than this (decayed) often has no rate of its own
FIRST_PAUSE_ROUNDS = 8
LONGEST_PAUSE_ROUNDS = 256
PROBE_LENGTH = 2
MARGIN = 1.02  # drafting must beat plain steps by this much to be chosen
CHEAP_DRAFT = 0.02  # a drafter is free when a token costs under this share of a step
SMOOTHING = 0.3


def expected_tokens(rates: list[float], drafts: int) -> float:
    """Tokens a round yields on average with `drafts` drafts (the target's own included),
    `rates[j]` being the chance draft j + 1 is kept once the ones before it were."""
    total, survive = 1.0, 1.0
    for position in range(drafts):
        survive *= rates[position]
        total += survive
    return total


@dataclass
class Acceptance:
    """Decayed per-position counts of one kind of draft, and its pause when drafting
    does not pay."""

    reached: list[float] = field(default_factory=list)  # rounds that verified position j
    kept: list[float] = field(default_factory=list)  # of which kept the token there
    pause_left: int = 0
    next_pause: int = FIRST_PAUSE_ROUNDS
    pauses: int = 0

    def rates(self, positions: int) -> list[float]:
        """a_1 .. a_positions; past the positions verified lately, the last one's rate
        carries on (drafts kept whole so far are likely to be kept longer too)."""
        rates: list[float] = []
        for j in range(positions):
            reached = self.reached[j] if j < len(self.reached) else 0.0
            if reached < UNSEEN and rates:
                rates.append(rates[-1])
                continue
            kept = self.kept[j] if j < len(self.kept) else 0.0
            rates.append((kept + PRIOR_KEPT) / (reached + PRIOR_REACHED))
        return rates

    def record(self, drafted: int, accepted: int) -> None:
        grow = drafted - len(self.reached)
        if grow > 0:
            self.reached += [0.0] * grow
            self.kept += [0.0] * grow
        self.reached = [DECAY * r for r in self.reached]
        self.kept = [DECAY * k for k in self.kept]
        for j in range(min(accepted + 1, drafted)):
            self.reached[j] += 1.0
            self.kept[j] += 1.0 if j < accepted else 0.0
        if accepted >= drafted and self.next_pause > FIRST_PAUSE_ROUNDS:
            self.next_pause = max(FIRST_PAUSE_ROUNDS, self.next_pause // 2)


@dataclass
class DraftPolicy:
    max_draft: int
    draft_seconds_per_token: float | None = None  # running average of the drafter's time
    kinds: dict[int, Acceptance] = field(default_factory=dict)
    adaptive: bool = True  # False: always `max_draft` (the benchmark's naive baseline)

    def ask_length(self, cost: ForwardCost) -> int:
        """Tokens to ask the drafter for this round (0: decode plainly)."""
        if self.max_draft <= 0:
            return 0
        if self._cheap(cost) or not self.adaptive:
            return self.max_draft
        if self.hopeless(cost):
            return 0
        return self._decide(self._kind(0), cost)

    def keep_length(self, kind: int, proposed: int, cost: ForwardCost) -> int:
        """How many of `proposed` tokens (a draft of this kind) to verify."""
        if proposed <= 0 or not self._cheap(cost) or not self.adaptive:
            return proposed
        return min(proposed, self._decide(self._kind(kind), cost))

    def best_length(self, acceptance: Acceptance, cost: ForwardCost) -> int:
        """The draft length with the most tokens per second; the cap while costs are
        unknown (no plain step timed yet)."""
        plain = cost.estimate(1)
        if plain is None:
            return self.max_draft
        best, best_rate = 0, MARGIN / plain
        rates = acceptance.rates(self.max_draft)
        for drafts in range(1, self.max_draft + 1):
            seconds = cost.estimate(drafts + 1)
            assert seconds is not None
            seconds += drafts * (self.draft_seconds_per_token or 0.0)
            rate = expected_tokens(rates, drafts) / seconds
            if rate > best_rate:
                best, best_rate = drafts, rate
        return best

    def record(self, kind: int, drafted: int, accepted: int,
               draft_seconds: float | None) -> None:
        """One verified round: `drafted` tokens verified (drawn in `draft_seconds`; None
        when that time says nothing of the drafter's speed), `accepted` kept."""
        if drafted <= 0:
            return
        self._kind(kind).record(drafted, accepted)
        if draft_seconds is None:
            return
        per_token = draft_seconds / drafted
        known = self.draft_seconds_per_token
        self.draft_seconds_per_token = per_token if known is None else (
            known + SMOOTHING * (per_token - known))

    def hopeless(self, cost: ForwardCost) -> bool:
        """Whether even drafts that are always kept would not pay, at this drafter's
        known cost per token (a draft model slower than the model it drafts for)."""
        if self.draft_seconds_per_token is None or cost.estimate(1) is None:
            return False
        certain = Acceptance(reached=[1e6] * self.max_draft, kept=[1e6] * self.max_draft)
        return self.best_length(certain, cost) == 0

    @property
    def pauses(self) -> int:
        return sum(kind.pauses for kind in self.kinds.values())

    def _kind(self, kind: int) -> Acceptance:
        return self.kinds.setdefault(kind, Acceptance())

    def _cheap(self, cost: ForwardCost) -> bool:
        plain = cost.estimate(1)
        per_token = self.draft_seconds_per_token
        return plain is not None and per_token is not None and per_token < CHEAP_DRAFT * plain

    def _decide(self, acceptance: Acceptance, cost: ForwardCost) -> int:
        if acceptance.pause_left > 0:
            acceptance.pause_left -= 1
            return min(PROBE_LENGTH, self.max_draft) if acceptance.pause_left == 0 else 0
        best = self.best_length(acceptance, cost)
        if best == 0:
            acceptance.pause_left = acceptance.next_pause
            acceptance.next_pause = min(LONGEST_PAUSE_ROUNDS, acceptance.next_pause * 2)
            acceptance.pauses += 1
        return best
