"""What each side of a partition may do: the rule, as pure functions.

The cluster keeps its last agreed membership in the State. A side that holds more than
half of it is the majority; only the majority updates the agreed membership (at once when
members arrive, after a grace when they leave). By default (`available`) a minority side
goes on serving and accepts changes too, because it cannot tell a partition from members
that died; its master keeps the lasting commands it accepted and, when the partition heals
and it follows the majority's master, sends them again, so nothing a user was told
succeeded is lost. With `--quorum majority` a minority side indexes nothing, and its API
refuses what would start something with a 503 that names the partition.
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
LASTING = PlaceInstance | DeleteInstance | ReplaceInstance | RevokeNode
# Under `--quorum majority` a minority side starts no generation either; cancelling and
# finishing what it has are harmless and go through (its master drops them).
STARTS = TextGeneration


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


def is_lasting(command: Command) -> bool:
    return isinstance(command, LASTING)


def refusal(command: Command, standing: Standing, quorum: Quorum) -> str | None:
    """Why this side must refuse `command`, or None."""
    if quorum != "majority" or standing.majority or isinstance(command, ForgetMember):
        return None
    if isinstance(command, LASTING | STARTS):
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
