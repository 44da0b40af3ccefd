"""How announced model cards change the State: one card per id, held by the nodes whose
stores hold its weights. Pure and idempotent, so a resent announcement changes nothing."""

from skulk.shared.types.events import ModelCardAdded
from skulk.shared.types.ids import ModelId, NodeId
from skulk.shared.types.state import State


def model_card_added(state: State, event: ModelCardAdded) -> State:
    """Record the card and its holder. A card whose content changed (the master allows it
    only from its sole holder) starts over with that holder alone."""
    model_id = event.card.model_id
    known = state.model_cards.get(model_id)
    holders = state.model_card_holders.get(model_id, [])
    if known == event.card and event.node_id in holders:
        return state
    kept = holders if known == event.card else []
    return state.model_copy(update={
        "model_cards": {**state.model_cards, model_id: event.card},
        "model_card_holders": {**state.model_card_holders,
                               model_id: sorted({*kept, event.node_id})}})


def model_card_removed(state: State, model_id: ModelId, node_id: NodeId) -> State:
    """Drop `node_id` as a holder of `model_id`; the card goes when no holder is left."""
    holders = state.model_card_holders.get(model_id, [])
    if node_id not in holders:
        return state
    left = [n for n in holders if n != node_id]
    if left:
        return state.model_copy(update={
            "model_card_holders": {**state.model_card_holders, model_id: left}})
    return state.model_copy(update={
        "model_cards": {k: v for k, v in state.model_cards.items() if k != model_id},
        "model_card_holders": {k: v for k, v in state.model_card_holders.items()
                               if k != model_id}})


def forget_holder(state: State, node_id: NodeId) -> State:
    """Drop `node_id` as a holder of every card (an expelled node)."""
    for model_id in [m for m, nodes in state.model_card_holders.items() if node_id in nodes]:
        state = model_card_removed(state, model_id, node_id)
    return state
