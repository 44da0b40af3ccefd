"""Followers' sync requests, gathered over a short period and answered once.

After an election round every follower asks its master for what follows its last index,
and a follower that has not adopted the new master's session asks for a snapshot every
half second until it has. Answered one by one, N followers made N replays or snapshots,
each published to all N nodes. Gathered, one period's requests are answered by a single
replay from the earliest index any of them lacks, or by one snapshot when any asked for
one (a snapshot catches up every follower of the session that lags behind it).
"""

from dataclasses import dataclass

import anyio

from skulk.shared.types.election import StateSyncMessage
from skulk.shared.types.ids import SessionId


@dataclass(frozen=True)
class WantedSync:
    """What one period's requests need: a snapshot, and/or a replay from an index."""

    snapshot: bool = False
    replay_from: int | None = None


class SyncRequests:
    """Requests gathered since the last `take`, for the master of `session`."""

    def __init__(self, session: SessionId) -> None:
        self._session = session
        self._wanted = WantedSync()
        self._arrived = anyio.Event()

    def add(self, request: StateSyncMessage) -> None:
        wanted = self._wanted
        if request.kind == "replay_request" and request.session == self._session:
            start = request.from_index if wanted.replay_from is None else min(
                wanted.replay_from, request.from_index)
            self._wanted = WantedSync(snapshot=wanted.snapshot, replay_from=start)
        else:  # a snapshot request, or a replay of another session: only a snapshot serves
            self._wanted = WantedSync(snapshot=True, replay_from=wanted.replay_from)
        self._arrived.set()

    async def wait(self) -> None:
        """Until a request has been gathered since the last `take`."""
        await self._arrived.wait()

    def take(self) -> WantedSync:
        wanted, self._wanted = self._wanted, WantedSync()
        self._arrived = anyio.Event()
        return wanted
