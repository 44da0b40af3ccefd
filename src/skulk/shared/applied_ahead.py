"""States the master on this node already computed, offered to this node's replica.

The master applies every event it indexes; the node's own replica then receives the very
same `IndexedEvent` object, handed over in-process, and would apply it a second time. The
master offers the State it reached, and the replica adopts it for that object only:
nothing that arrives over the wire is that object, so no other node can offer a State.
"""

from skulk.shared.types.events import IndexedEvent
from skulk.shared.types.state import State

# Offers the replica has not taken yet (it follows another session, or lags behind a
# burst): past this the oldest are dropped and those events are applied as usual.
MAX_OFFERS = 256


class AppliedAhead:
    """The State after each event the local master indexed, until the replica takes it."""

    def __init__(self) -> None:
        self._offers: dict[int, tuple[IndexedEvent, State]] = {}

    def offer(self, indexed: IndexedEvent, after: State) -> None:
        """`after` is `apply(state before, indexed)` as the master computed it."""
        self._offers[indexed.index] = (indexed, after)
        if len(self._offers) > MAX_OFFERS:
            del self._offers[next(iter(self._offers))]

    def take(self, indexed: IndexedEvent) -> State | None:
        """The State offered for this very object (None for any other, even an equal one:
        it may come from another session or master)."""
        offer = self._offers.pop(indexed.index, None)
        if offer is None:
            return None
        if offer[0] is not indexed:
            return None
        return offer[1]

    def __len__(self) -> int:
        return len(self._offers)
