"""A producer's side of local events: number them, resend until the master indexed them."""

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

    @property
    def pending(self) -> int:
        return len(self._pending)

    async def send(self, event: Event) -> None:
        local = LocalEvent(origin=self._node_id, epoch=self._epoch,
                           origin_seq=self._next_seq, event=event)
        self._next_seq += 1
        now = self._clock()
        self._pending[local.origin_seq] = _Pending(local, now, now + FIRST_RESEND_SECONDS,
                                                   FIRST_RESEND_SECONDS)
        await self._published.send(local)

    def acknowledge(self, state: State) -> None:
        """Stop resending what the State shows indexed (a snapshot counts too)."""
        mark = state.producer_marks.get(self._node_id)
        if mark is None:
            return
        for seq in [s for s in self._pending if mark.covers(self._epoch, s)]:
            del self._pending[seq]

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
                await self._published.send(pending.local)
