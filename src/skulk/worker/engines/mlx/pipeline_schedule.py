"""When a pipeline runs overlapped, and in which order its micro-batches go round (pure).

An overlapped run starts at an agreement point (every rank holds the same rows) and lasts
until rank 0 drains it. Rank 0 launches every non-empty micro-batch down the pipeline at
once, then, each time the last rank's sampled tokens of micro-batch k come back,
launches k's next step: while the last rank samples k, the first computes k + 1, and no
rank waits for a collective. Rank 0 relaunches in the order the replies come, which is
the order it launched, so every rank sees the micro-batches strictly in turn
(0, 1, ..., P - 1, 0, 1, ...) and checks that it does.

Rank 0 drains the run (relaunches nothing more, collects what is in flight, then sends
FINAL) as soon as the batch's membership should change: a row finished, a cancel was
asked on any rank, a request waits to join a free slot, or after `agree_every` replies.
"""

from collections import deque
from dataclasses import dataclass, field

from skulk.worker.engines.mlx.pipeline_wire import PipelineProtocolError

# Replies after which a run drains even if nothing changed: a bound on how long the ranks
# go without an agreement point, not a pace (a run normally ends on a membership change).
AGREE_EVERY_REPLIES = 256


def may_overlap(micro_batches: int, world_size: int, rows: int, prefilling: int,
                speculation: bool) -> bool:
    """Whether this step starts an overlapped run; decided from what every rank agreed on.

    Not while a prompt is still being prefilled (prefill goes step by step beside the
    decode, at agreement points) and not for a lone row of an instance that drafts (its
    speculative rounds keep their own two collectives)."""
    if micro_batches < 2 or world_size < 2 or rows == 0 or prefilling > 0:
        return False
    return not (speculation and rows == 1)


@dataclass
class LeaderSchedule:
    """Rank 0's view of a run: which micro-batches are in flight, and whether to go on."""

    micro_batches: int  # the non-empty ones, numbered 0..micro_batches-1
    agree_every: int = AGREE_EVERY_REPLIES
    in_flight: deque[int] = field(default_factory=deque)
    replies: int = 0
    draining: bool = False

    def start(self) -> list[int]:
        """The micro-batches to launch now, in order: all of them."""
        if self.micro_batches < 1:
            raise ValueError("a run needs at least one micro-batch")
        self.in_flight.extend(range(self.micro_batches))
        return list(self.in_flight)

    @property
    def expected(self) -> int:
        """The micro-batch whose reply comes next."""
        if not self.in_flight:
            raise PipelineProtocolError("no micro-batch is in flight")
        return self.in_flight[0]

    def on_reply(self, micro_batch: int, wants_agreement: bool) -> bool:
        """Account for one reply; True: launch this micro-batch's next step now."""
        if micro_batch != self.expected:
            raise PipelineProtocolError(
                f"a reply for micro-batch {micro_batch} while {self.expected} was due")
        self.in_flight.popleft()
        self.replies += 1
        if wants_agreement or self.replies >= self.agree_every:
            self.draining = True
        if self.draining:
            return False
        self.in_flight.append(micro_batch)
        return True

    @property
    def drained(self) -> bool:
        """Everything launched has come back: time to send FINAL."""
        return self.draining and not self.in_flight


@dataclass
class FollowerSchedule:
    """A rank after the first: checks the turn of each header and says when the tokens
    it carries are news (the inputs of a micro-batch's second and later steps are the
    tokens sampled in its step before)."""

    micro_batches: int
    expected: int = 0
    seen: set[int] = field(default_factory=set)

    def on_run(self, micro_batch: int) -> bool:
        """Account for a RUN header; True: its tokens are newly sampled ones."""
        if micro_batch != self.expected:
            raise PipelineProtocolError(
                f"micro-batch {micro_batch} came down the pipeline while {self.expected} "
                "was due")
        self.expected = (self.expected + 1) % self.micro_batches
        first = micro_batch not in self.seen
        self.seen.add(micro_batch)
        return not first

    def on_final(self) -> None:
        """FINAL may only come once every micro-batch ran at least once."""
        if len(self.seen) != self.micro_batches:
            raise PipelineProtocolError(
                f"FINAL after {len(self.seen)} of {self.micro_batches} micro-batches ran")
