"""Read-only views a part is handed instead of a callback: membership, the elected
master, the replicated State. The owners (`Membership`, `Election`, `StateReplica`)
satisfy them; tests hand small fakes."""

from collections.abc import Set
from typing import Protocol

from skulk.shared.types.ids import NodeId, SessionId
from skulk.shared.types.state import State


class LiveMembers(Protocol):
    """Members live by their liveliness tokens."""

    @property
    def live(self) -> Set[NodeId]: ...


class ElectedMaster(Protocol):
    """Whom the election chose (None: no master yet)."""

    @property
    def master(self) -> NodeId | None: ...


class ReplicaView(Protocol):
    """The replicated State and its session (None: following no master yet)."""

    @property
    def state(self) -> State: ...

    @property
    def session(self) -> SessionId | None: ...
