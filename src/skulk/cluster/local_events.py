"""A producer's side of local events: number them, send what is ready together, resend
until the master indexed them.

Proposals leave in `LocalEventBatch`es, one signature each: `send` numbers its proposal and
puts it in the outbox; the sender's own task (`run`) wakes, lets the loop turn while each
turn brings more (as the master's `with_ready` takes) and sends the outbox as one
batch. A proposal alone waits one turn, never a timer; proposals made one after another
without a yield, or by several producers in one turn, leave together. Resends that fall
due together leave together too.
"""

import time
from collections.abc import Callable
from dataclasses import dataclass

import anyio
import anyio.lowlevel
from loguru import logger

from skulk.master.local_event_rules import moot_local_event
from skulk.shared.channels import Sender
from skulk.shared.types.events import (
    MAX_PROPOSALS_TOGETHER,
    Event,
    LocalEvent,
    LocalEventBatch,
)
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
                 published: Sender[LocalEventBatch],
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._node_id = node_id
        self._epoch = epoch
        self._published = published
        self._clock = clock
        self._next_seq = 0
        self._pending: dict[int, _Pending] = {}
        # Ready to leave, by sequence number (a resend of one already here is a no-op).
        self._outbox: dict[int, LocalEvent] = {}
        self._ready = anyio.Event()
        self._sending = False
        self.indexing_time = IndexingTime()
        self.batches_sent = 0
        self.proposals_sent = 0  # resends included

    @property
    def pending(self) -> int:
        return len(self._pending)

    @property
    def all_sent(self) -> bool:
        """Whether nothing waits in the outbox or is on its way out."""
        return not self._outbox and not self._sending

    async def send(self, event: Event) -> None:
        """Number `event` and put it in the outbox; `run` sends it within a turn."""
        local = LocalEvent(origin=self._node_id, epoch=self._epoch,
                           origin_seq=self._next_seq, event=event)
        self._next_seq += 1
        now = self._clock()
        wait = self.indexing_time.first_resend()
        self._pending[local.origin_seq] = _Pending(local, now, now + wait, wait)
        self._outbox[local.origin_seq] = local
        self._ready.set()

    async def run(self) -> None:
        """Send what the outbox holds, in batches, for as long as the node runs."""
        while True:
            await self._ready.wait()
            self._ready = anyio.Event()
            self._sending = True
            try:
                while self._outbox:
                    await self._gather()
                    ready = [self._outbox.pop(seq)
                             for seq in sorted(self._outbox)[:MAX_PROPOSALS_TOGETHER]]
                    if ready:
                        self.batches_sent += 1
                        self.proposals_sent += len(ready)
                        await self._published.send(LocalEventBatch(origin=self._node_id,
                                                                   events=ready))
            finally:
                self._sending = False

    async def _gather(self) -> None:
        """Let the loop turn while each turn brings more, up to a batch's worth."""
        while len(self._outbox) < MAX_PROPOSALS_TOGETHER:
            before = len(self._outbox)
            await anyio.lowlevel.checkpoint()
            if len(self._outbox) == before:
                return

    def acknowledge(self, state: State) -> None:
        """Stop resending what the State shows indexed (a snapshot counts too), and a
        task's status once the State no longer holds the task: the master does not index
        a deleted task's status (`moot_local_event`)."""
        mark = state.producer_marks.get(self._node_id)
        now = self._clock()
        for seq, pending in list(self._pending.items()):
            if mark is not None and mark.covers(self._epoch, seq):
                if not pending.resent:
                    self.indexing_time.sample(now - pending.first_sent)
            elif not moot_local_event(state, pending.local):
                continue
            del self._pending[seq]
            self._outbox.pop(seq, None)

    async def resend_due(self) -> None:
        """Send again, together, every pending event whose next send is due."""
        now = self._clock()
        for seq, pending in sorted(self._pending.items()):
            if now - pending.first_sent > GIVE_UP_SECONDS:
                logger.warning("gave up on local event {} after {:.0f} s without a master",
                               type(pending.local.event).__name__, GIVE_UP_SECONDS)
                del self._pending[seq]
                self._outbox.pop(seq, None)
            elif now >= pending.next_send:
                pending.gap = min(pending.gap * 2, MAX_RESEND_GAP_SECONDS)
                pending.next_send = now + pending.gap
                pending.resent = True
                self._outbox[seq] = pending.local
                self._ready.set()
