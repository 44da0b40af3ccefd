"""The deciding rank's side of speculative decoding: one drafting session and one draft
length policy per request, the draft it asks for each round and the verdict on it.

Other ranks never hold a `Speculator`; they learn the drafts and verdicts from the
round's collectives (see vectors.py).
"""

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import mlx.core as mx
import numpy as np
from loguru import logger

from skulk.shared.types.ids import TaskId
from skulk.shared.types.traces import Span
from skulk.worker.engines.mlx.drafters.draft_model import DraftModelDrafter
from skulk.worker.engines.mlx.drafters.protocol import (
    EMPTY_DRAFT,
    Draft,
    Drafter,
    DraftSession,
)
from skulk.worker.engines.mlx.requests import Request
from skulk.worker.engines.mlx.speculation.accept import Verdict, accept_greedy, accept_sampled
from skulk.worker.engines.mlx.speculation.cost import ForwardCost
from skulk.worker.engines.mlx.speculation.policy import DraftPolicy


@dataclass
class _Drafting:
    session: DraftSession
    policy: DraftPolicy
    draft: Draft = EMPTY_DRAFT
    # None for the session's first draft, whose time is mostly catching up on the prompt
    # (a draft model prefills it): not what the drafter costs per token.
    draft_seconds: float | None = None
    proposals: int = 0


@dataclass
class Speculator:
    """Drafting for every request of one loop, on the rank that decides tokens."""

    drafters: Mapping[str, Drafter]
    vocab_size: int
    cost: ForwardCost = field(default_factory=ForwardCost)  # one-row forward passes
    adaptive: bool = True
    # Seconds per drafted token, per drafter, over every request: a new request starts
    # from what the drafter cost the last ones (a slow draft model is not tried afresh).
    draft_cost: dict[str, float] = field(default_factory=dict)
    _active: dict[TaskId, _Drafting] = field(default_factory=dict)
    _unavailable: set[TaskId] = field(default_factory=set)

    def measure_drafters(self) -> None:
        """Time the drafters whose cost matters (a draft model) before any request."""
        for name, drafter in self.drafters.items():
            if isinstance(drafter, DraftModelDrafter):
                self.draft_cost[name] = drafter.seconds_per_token()
                logger.info("draft model: {:.1f} ms per drafted token",
                            self.draft_cost[name] * 1000)

    def draft(self, request: Request, context: Sequence[int], room: int) -> Draft:
        """The draft for this round: at most `room` tokens (what the request may still
        generate beyond the one token every round yields anyway)."""
        drafting = self._drafting(request)
        if drafting is None or self.cost.wants_one_token_step:
            return EMPTY_DRAFT
        policy = drafting.policy
        limit = min(policy.ask_length(self.cost), room)
        drafting.draft = EMPTY_DRAFT
        if limit <= 0:
            return EMPTY_DRAFT
        started = time.perf_counter()
        draft = self._checked(drafting.session.propose(context, limit).truncated(limit))
        drafting.proposals += 1
        drafting.draft_seconds = (time.perf_counter() - started
                                  if drafting.proposals > 1 else None)
        drafting.draft = draft.truncated(policy.keep_length(draft.kind, len(draft.tokens),
                                                            self.cost))
        return drafting.draft

    def judge(self, request: Request, logits: mx.array, drafts: Sequence[int]) -> Verdict:
        """The verdict on `drafts` from the verify logits [len(drafts) + 1, V]."""
        sampler = request.sampler
        if sampler.greedy:
            choices: list[int] = mx.argmax(logits, axis=-1).tolist()  # type: ignore[assignment]
            return accept_greedy(drafts, choices)
        rows = np.array(logits, dtype=np.float32)
        if not drafts:  # exactly the plain sampler's draw
            return Verdict(0, sampler.sample(rows[0]))
        targets = [sampler.distribution(rows[i]) for i in range(len(drafts) + 1)]
        drafting = self._active.get(request.task_id)
        probabilities = None
        if drafting is not None and drafting.draft.tokens == tuple(drafts):
            probabilities = drafting.draft.probabilities
        return accept_sampled(drafts, probabilities, targets, sampler.generator)

    def record(self, request: Request, drafted: int, accepted: int,
               verify_seconds: float) -> None:
        """A verified round of one row: `drafted` tokens verified in `verify_seconds`."""
        self.cost.observe(drafted + 1, verify_seconds)
        drafting = self._active.get(request.task_id)
        if drafting is not None and drafted > 0:
            drafting.policy.record(drafting.draft.kind, drafted, accepted,
                                   drafting.draft_seconds)
            name = request.speculation.drafter
            if name is not None and drafting.policy.draft_seconds_per_token is not None:
                self.draft_cost[name] = drafting.policy.draft_seconds_per_token

    def forget(self, task_id: TaskId) -> tuple[Span, ...]:
        """The request left: close its session; what its trace should show of drafting."""
        drafting = self._active.pop(task_id, None)
        self._unavailable.discard(task_id)
        return () if drafting is None else drafting.session.close()

    def policy_of(self, task_id: TaskId) -> DraftPolicy | None:
        drafting = self._active.get(task_id)
        return None if drafting is None else drafting.policy

    def _drafting(self, request: Request) -> _Drafting | None:
        drafting = self._active.get(request.task_id)
        if drafting is not None or request.task_id in self._unavailable:
            return drafting
        choice = request.speculation
        drafter = None if choice.drafter is None else self.drafters.get(choice.drafter)
        if drafter is None or choice.max_draft <= 0:
            if choice.drafter is not None:
                logger.info("request {}: drafter {} is not available here; decoding "
                            "without drafts", request.task_id, choice.drafter)
            self._unavailable.add(request.task_id)
            return None
        policy = DraftPolicy(choice.max_draft, adaptive=self.adaptive,
                             draft_seconds_per_token=self.draft_cost.get(drafter.name))
        drafting = _Drafting(drafter.open(request.task_id), policy)
        self._active[request.task_id] = drafting
        return drafting

    def _checked(self, draft: Draft) -> Draft:
        """Keep the draft up to its first token outside the vocabulary (a remote drafter
        may send anything)."""
        for index, token in enumerate(draft.tokens):
            if not 0 <= token < self.vocab_size:
                return draft.truncated(index)
        return draft
