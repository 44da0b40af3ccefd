"""What the cluster can answer now: the models running (an instance placed), those whose
weights some node's disk holds, and the catalogue cards that would need a download first.

Clients that list models and pick one (chat UIs do) must see the first two; the model lists
of every dialect read them from here, and so does the 404 for a name nobody knows.
"""

import difflib
from dataclasses import dataclass
from typing import Literal

from skulk.api.context import ApiContext
from skulk.api.errors import ApiError
from skulk.shared.types.ids import NodeId
from skulk.shared.types.model_cards import ModelCard

ModelStatus = Literal["running", "held", "download"]

# Listing order: what answers at once, then what loads from a disk, then what downloads.
_STATUS_ORDER: dict[ModelStatus, int] = {"running": 0, "held": 1, "download": 2}
_CLOSE_MATCHES = 3


@dataclass(frozen=True)
class ModelAvailability:
    """One card and where the cluster stands with it."""

    card: ModelCard
    status: ModelStatus
    # Nodes whose disk holds a whole copy of the weights (this node included when its own
    # files or bundled package hold them).
    held_by: list[NodeId]


def holders(context: ApiContext, card: ModelCard) -> list[NodeId]:
    """The nodes holding `card`'s weights whole: from their telemetry, the announced
    cards' holders, and this node's own files (a bundled model is in no store)."""
    found = set(context.cluster.replica.state.model_card_holders.get(card.model_id, []))
    for node_id, reading in context.cluster.telemetry.live().items():
        if any(held.model_id == card.model_id and held.layers is None
               for held in reading.held_models):
            found.add(node_id)
    if any(context.cluster.catalog.local_path(card, source.format) for source in card.sources):
        found.add(context.cluster.node_id)
    return sorted(found)


def availability(context: ApiContext, card: ModelCard) -> ModelAvailability:
    held_by = holders(context, card)
    status: ModelStatus = "download"
    if context.cluster.replica.state.instances_of(card.model_id):
        status = "running"
    elif held_by:
        status = "held"
    return ModelAvailability(card=card, status=status, held_by=held_by)


def listed_models(context: ApiContext, *, everything: bool) -> list[ModelAvailability]:
    """Running models first, then held ones, each in catalogue order; with `everything`,
    the cards that need a download after them."""
    known = [availability(context, card) for card in context.cluster.catalog.cards()]
    shown = [model for model in known if everything or model.status != "download"]
    return sorted(shown, key=lambda model: _STATUS_ORDER[model.status])


def unknown_model(context: ApiContext, name: str) -> ApiError:
    """The 404 for a name no card has: its close matches, and what the cluster can answer
    now, rather than the whole catalogue."""
    cards = context.cluster.catalog.cards()
    by_name = {alias.lower(): card.model_id
               for card in cards for alias in (card.model_id, *card.aliases)}
    wanted = name.lower()
    close = difflib.get_close_matches(wanted, list(by_name), n=_CLOSE_MATCHES, cutoff=0.6)
    contained = [alias for alias in by_name if len(wanted) >= 3 and wanted in alias]
    suggestions = list(dict.fromkeys(by_name[alias] for alias in [*close, *contained]))
    head = f"the model '{name}' does not exist"
    if suggestions:
        head += f" (did you mean {' or '.join(suggestions[:_CLOSE_MATCHES])}?)"
    answerable = listed_models(context, everything=False)
    running = [m.card.model_id for m in answerable if m.status == "running"]
    held = [m.card.model_id for m in answerable if m.status == "held"]
    message = (f"{head}; running: {', '.join(running) or 'none'}; held on a node's disk, "
               f"ready to load: {', '.join(held) or 'none'}; GET /v1/models?all=true lists "
               f"all {len(cards)} catalogue models")
    return ApiError(404, message, code="model_not_found", param="model")
