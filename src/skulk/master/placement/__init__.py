"""Placement: a pure choice of where an instance runs, or a typed reason it cannot.

Modules: `layers` (splits), `engines` (which engines a card and a node allow), `plans`
(one shape over given nodes), `select` (the narrowest fitting shape, or a predicted
faster one), `speed` (each plan's predicted decode speed), `ring` (ports),
`place` (the Instance), `previews` (every shape, for the API), `widen` (refusal -> one
node wider). What a shard needs of a node's memory and GPUs, and the engines as placement
sees them, are `skulk/fitting/`'s, which the worker's fit guard reads too.
"""

from skulk.fitting.memory import (
    KV_CONTEXT_BUDGET_TOKENS,
    context_token_limit,
    shard_need_bytes,
    usable_bytes,
    whole_model,
)
from skulk.master.placement.cluster import ClusterView
from skulk.master.placement.errors import PlacementError
from skulk.master.placement.place import place
from skulk.master.placement.previews import PlacementPreview, previews
from skulk.master.placement.ring import DEFAULT_RING_PORTS
from skulk.master.placement.select import choose_plan
from skulk.master.placement.widen import wider_placement

__all__ = [
    "DEFAULT_RING_PORTS",
    "KV_CONTEXT_BUDGET_TOKENS",
    "ClusterView",
    "PlacementError",
    "PlacementPreview",
    "choose_plan",
    "context_token_limit",
    "place",
    "previews",
    "shard_need_bytes",
    "usable_bytes",
    "whole_model",
    "wider_placement",
]
