"""Which side of a partition may make lasting changes: the rule, as pure functions.

The cluster keeps its last agreed membership in the State. A side that holds more than
half of it is the majority: it places, deletes and expels, and it updates the agreed
membership (at once when members arrive, after a grace when they leave). A side that
holds half or less goes on serving the instances it has, but refuses lasting changes with
a reason, so nothing a user is told succeeded there can be undone when the partition
heals. With `--quorum majority` such a side indexes nothing at all.
"""

from collections.abc import Mapping, Set
from dataclasses import dataclass
from typing import Literal

from skulk.shared.types.commands import (
    Command,
    DeleteInstance,
    ForgetMember,
    PlaceInstance,
    ReplaceInstance,
    RevokeNode,
    TextGeneration,
)
from skulk.shared.types.ids import NodeId

Quorum = Literal["available", "majority"]
# Commands whose effect outlives the partition; ForgetMember is how an operator gets a
# side that will never see its lost members again out of the minority, so it is allowed.
LASTING = (PlaceInstance, DeleteInstance, ReplaceInstance, RevokeNode)
# Under `--quorum majority` a minority side starts no generation either; cancelling and
# finishing what it has are harmless and go through (its master drops them).
STARTS = (TextGeneration,)


class Partitioned(RuntimeError):
    """A request refused because this side of a partition lacks a majority."""


@dataclass(frozen=True)
class Standing:
    live: frozenset[NodeId]
    agreed: frozenset[NodeId]

    @property
    def majority(self) -> bool:
        """An empty agreement (a new cluster) has no minority."""
        return not self.agreed or 2 * len(self.live & self.agreed) > len(self.agreed)

    def describe(self) -> str:
        return (f"this side of the cluster holds {len(self.live & self.agreed)} of the "
                f"{len(self.agreed)} members last agreed on ({', '.join(sorted(self.agreed))})")


def refusal(command: Command, standing: Standing, quorum: Quorum) -> str | None:
    """Why a master on this side must refuse `command`, or None."""
    if standing.majority or isinstance(command, ForgetMember):
        return None
    if isinstance(command, LASTING) or (quorum == "majority" and isinstance(command, STARTS)):
        return (f"{standing.describe()}; changes that must last wait until the partition "
                "heals (or `skulk cluster forget NODE` for a member gone for good)")
    return None


def agreed_next(agreed: Set[NodeId], live: Set[NodeId], missing_since: Mapping[NodeId, float],
                now: float, grace: float) -> frozenset[NodeId] | None:
    """The membership to agree on now, or None when it stays: live members join at once;
    a member leaves the agreement once missing for `grace` seconds."""
    gone = {node for node, since in missing_since.items() if now - since >= grace}
    target = (frozenset(agreed) | frozenset(live)) - gone
    return None if target == frozenset(agreed) else target


def refuse_on_a_strict_minority(command: Command, quorum: Quorum, live: Set[NodeId],
                                agreed: list[NodeId]) -> None:
    """Under `--quorum majority`, raise `Partitioned` for a command a side without a
    majority must not send: its master indexes nothing, so it would wait in vain."""
    if quorum != "majority":
        return
    refused = refusal(command, Standing(frozenset(live), frozenset(agreed)), quorum)
    if refused is not None:
        raise Partitioned(refused)
