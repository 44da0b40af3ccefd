"""What the master does with a node's card announcements: check the sender and the card,
then record it (`ModelCardAdded`) or forget it (`ModelCardRemoved`).

A card steers placement on every node, so the master refuses one that would shadow a
built-in card, take another node's model id, or carry figures no model has.
"""

from pathlib import PurePosixPath

from skulk.models.catalog import ModelCatalog
from skulk.shared.types.commands import AddModelCard, CommandEnvelope, RemoveModelCard
from skulk.shared.types.events import CommandRejected, Event, ModelCardAdded, ModelCardRemoved
from skulk.shared.types.model_cards import ModelCard
from skulk.shared.types.state import State

# Figures beyond these are typos or forgeries, not models (the largest published models
# are far below them).
_MAX_LAYERS = 10_000
_MAX_HIDDEN = 1 << 20
_MAX_CONTEXT = 1 << 27


def refused_card_sender(state: State, envelope: CommandEnvelope) -> str | None:
    """Why the master must drop a card command unread, or None: a node announces only
    its own store, and only while it is a member (signed by the cluster, not revoked,
    in the agreed membership once there is one)."""
    command = envelope.command
    if not isinstance(command, AddModelCard | RemoveModelCard):
        return None
    if command.node_id != envelope.origin:
        return "another_nodes_store"
    if envelope.origin in state.revoked_nodes:
        return "revoked_node"
    if state.members and envelope.origin not in state.members:
        return "not_a_member"
    return None


def malformed_card(card: ModelCard) -> str | None:
    """What is wrong with a card's figures, or None when placement can work from them."""
    positive = {"n_layers": card.n_layers, "hidden_size": card.hidden_size,
                "num_attention_heads": card.num_attention_heads,
                "num_key_value_heads": card.num_key_value_heads,
                "context_length": card.context_length}
    for name, value in positive.items():
        if value < 1:
            return f"{name} is {value}; it must be at least 1"
    if card.n_layers > _MAX_LAYERS or card.hidden_size > _MAX_HIDDEN \
            or card.context_length > _MAX_CONTEXT:
        return "its layers, hidden size or context length are beyond any model's"
    if card.num_attention_heads % card.num_key_value_heads:
        return (f"{card.num_attention_heads} attention heads cannot share "
                f"{card.num_key_value_heads} key/value heads evenly")
    if not card.sources:
        return "it names no weights"
    for source in card.sources:
        path = PurePosixPath(source.filename)
        if source.size_bytes < 1:
            return f"its {source.format} weights are {source.size_bytes} bytes"
        if path.is_absolute() or ".." in path.parts or not source.filename:
            return f"its {source.format} file {source.filename!r} is not inside the store"
    return None


def add_model_card_events(state: State, command: AddModelCard,
                          catalog: ModelCatalog) -> list[Event]:
    card = command.card
    problem = malformed_card(card)
    if problem is None:
        problem = _collision(state, command, catalog)
    if problem is not None:
        return [CommandRejected(command_id=command.command_id, error_kind="invalid_request",
                                message=f"model card {card.model_id!r} from node "
                                        f"{command.node_id} refused: {problem}")]
    if catalog.builtin_card(card.model_id) == card:
        return []  # the cluster knows it already
    known = state.model_cards.get(card.model_id)
    if known == card and command.node_id in state.model_card_holders.get(card.model_id, []):
        return []  # a resend
    return [ModelCardAdded(card=card, node_id=command.node_id)]


def _collision(state: State, command: AddModelCard, catalog: ModelCatalog) -> str | None:
    card = command.card
    for name in (card.model_id, *card.aliases):
        builtin = catalog.builtin_card(name)
        if builtin is not None and builtin != card:
            return (f"{name!r} names the built-in card {builtin.model_id!r}, and this card "
                    "differs from it; add the model under another id (--model-id)")
    known = state.model_cards.get(card.model_id)
    others = [n for n in state.model_card_holders.get(card.model_id, [])
              if n != command.node_id]
    if known is not None and known != card and others:
        return (f"node(s) {', '.join(others)} hold a different model under this id; "
                "add it under another id (--model-id)")
    return None


def remove_model_card_events(state: State, command: RemoveModelCard) -> list[Event]:
    if command.node_id not in state.model_card_holders.get(command.model_id, []):
        return []
    return [ModelCardRemoved(model_id=command.model_id, node_id=command.node_id)]
