"""A producer's side of local events: number them, resend until the master indexed them.

The first resend waits as long as indexing takes here, smoothed as TCP smooths round trips
(mean plus four times the mean deviation, at least `FIRST_RESEND_SECONDS`): a busy
master that indexes in two seconds is not sent every event twice.
"""

import time
from collections.abc import Callable
from dataclasses import dataclass

from loguru import logger

from skulk.shared.channels import Sender
from skulk.shared.types.events import Event, LocalEvent
from skulk.shared.types.ids import NodeId
from skulk.shared.types.state import State

FIRST_RESEND_SECONDS = 1.0
MAX_RESEND_GAP_SECONDS = 8.0
GIVE_UP_SECONDS = 60.0


@dataclass
class _Pending:
    local: LocalEvent
    first_sent: float
    next_send: float
    gap: float
    resent: bool = False


class IndexingTime:
    """Seconds from sending an event to seeing it indexed, smoothed (RFC 6298's weights);
    only events sent once are sampled, so a resend's ack is not mistaken for the first's."""

    def __init__(self) -> None:
        self._mean: float | None = None
        self._deviation = 0.0

    def sample(self, seconds: float) -> None:
        if self._mean is None:
            self._mean, self._deviation = seconds, seconds / 2
            return
        self._deviation = 0.75 * self._deviation + 0.25 * abs(self._mean - seconds)
        self._mean = 0.875 * self._mean + 0.125 * seconds

    def first_resend(self) -> float:
        if self._mean is None:
            return FIRST_RESEND_SECONDS
        return min(max(self._mean + 4 * self._deviation, FIRST_RESEND_SECONDS),
                   MAX_RESEND_GAP_SECONDS)


class LocalEventSender:
    """Resends with backoff every event not yet seen indexed; gives up after a bound."""

    def __init__(self, *, node_id: NodeId, epoch: str,
                 published: Sender[LocalEvent],
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._node_id = node_id
        self._epoch = epoch
        self._published = published
        self._clock = clock
        self._next_seq = 0
        self._pending: dict[int, _Pending] = {}
        self.indexing_time = IndexingTime()

    @property
    def pending(self) -> int:
        return len(self._pending)

    async def send(self, event: Event) -> None:
        local = LocalEvent(origin=self._node_id, epoch=self._epoch,
                           origin_seq=self._next_seq, event=event)
        self._next_seq += 1
        now = self._clock()
        wait = self.indexing_time.first_resend()
        self._pending[local.origin_seq] = _Pending(local, now, now + wait, wait)
        await self._published.send(local)

    def acknowledge(self, state: State) -> None:
        """Stop resending what the State shows indexed (a snapshot counts too)."""
        mark = state.producer_marks.get(self._node_id)
        if mark is None:
            return
        now = self._clock()
        for seq in [s for s in self._pending if mark.covers(self._epoch, s)]:
            pending = self._pending.pop(seq)
            if not pending.resent:
                self.indexing_time.sample(now - pending.first_sent)

    async def resend_due(self) -> None:
        now = self._clock()
        for seq, pending in sorted(self._pending.items()):
            if now - pending.first_sent > GIVE_UP_SECONDS:
                logger.warning("gave up on local event {} after {:.0f} s without a master",
                               type(pending.local.event).__name__, GIVE_UP_SECONDS)
                del self._pending[seq]
            elif now >= pending.next_send:
                pending.gap = min(pending.gap * 2, MAX_RESEND_GAP_SECONDS)
                pending.next_send = now + pending.gap
                pending.resent = True
                await self._published.send(pending.local)
