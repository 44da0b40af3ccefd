"""Why a placement failed: impossible as asked, or not decidable yet."""

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from skulk.shared.types.ids import NodeId

# `impossible`: no node set in the cluster as it is can hold the model as asked; the
# request must change (HTTP 400). `pending`: some live node has not reported its memory
# yet, so the answer may change within seconds (HTTP 503).
PlacementErrorKind = Literal["impossible", "pending"]


@dataclass(frozen=True)
class PlacementError:
    """Why a model cannot be placed; `per_node` says, node by node, what did not fit."""

    message: str
    per_node: Mapping[NodeId, str] = field(default_factory=dict)
    kind: PlacementErrorKind = "impossible"

    @property
    def pending(self) -> bool:
        return self.kind == "pending"

    def describe(self) -> str:
        reasons = "; ".join(f"{node}: {why}" for node, why in sorted(self.per_node.items()))
        return self.message + (f" ({reasons})" if reasons else "")
