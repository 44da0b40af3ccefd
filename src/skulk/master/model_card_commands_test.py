from pathlib import Path

import pytest

from skulk.master.commands import CommandContext, events_for_command
from skulk.master.model_card_commands import malformed_card, refused_card_sender
from skulk.models.catalog import ModelCatalog
from skulk.shared.types.commands import AddModelCard, CommandEnvelope, RemoveModelCard
from skulk.shared.types.events import (
    CommandRejected,
    Event,
    MembershipAgreed,
    ModelCardAdded,
    ModelCardRemoved,
    NodeRevoked,
)
from skulk.shared.types.ids import CommandId, ModelId, NodeId, RunnerId, TaskId
from skulk.shared.types.model_cards import ModelCard, ModelSource
from skulk.shared.types.state import State
from skulk.testing import factories as f

A, B = NodeId("node-a"), NodeId("node-b")
CATALOG = ModelCatalog.builtin(Path("/nonexistent"))


def handle(state: State, command: AddModelCard | RemoveModelCard) -> list[Event]:
    context = CommandContext(catalog=CATALOG, nodes={}, new_runner_id=lambda: RunnerId("r"),
                             new_task_id=lambda: TaskId("t"))
    return events_for_command(state, command, context)


def add(card: ModelCard, node: NodeId = A) -> AddModelCard:
    return AddModelCard(command_id=CommandId("c"), node_id=node, card=card)


def rejection(events: list[Event]) -> str:
    assert len(events) == 1 and isinstance(events[0], CommandRejected)
    return events[0].message


def test_a_new_card_is_added_and_a_resend_adds_nothing() -> None:
    events = handle(State(), add(f.added_card()))
    assert events == [ModelCardAdded(card=f.added_card(), node_id=A)]
    assert handle(f.state_with(*events), add(f.added_card())) == []


def test_a_second_holder_of_the_same_card_is_added() -> None:
    state = f.state_with(ModelCardAdded(card=f.added_card(), node_id=A))
    assert handle(state, add(f.added_card(), B)) == [
        ModelCardAdded(card=f.added_card(), node_id=B)]


def test_a_card_colliding_with_a_builtin_card_is_refused() -> None:
    builtin = CATALOG.builtin_card("smollm2-135m")
    assert builtin is not None
    clash = builtin.model_copy(update={"n_layers": 2})
    assert "built-in card 'smollm2-135m'" in rejection(handle(State(), add(clash)))
    by_alias = f.added_card().model_copy(
        update={"aliases": ["HuggingFaceTB/SmolLM2-135M-Instruct"]})
    assert "built-in card" in rejection(handle(State(), add(by_alias)))
    assert handle(State(), add(builtin)) == []  # the same card: already known


def test_another_nodes_different_model_under_the_same_id_is_refused() -> None:
    state = f.state_with(ModelCardAdded(card=f.added_card(), node_id=A))
    message = rejection(handle(state, add(f.added_card(n_layers=4), B)))
    assert "node-a hold a different model" in message
    # Its sole holder may change it (the model was added again, say).
    assert handle(state, add(f.added_card(n_layers=4), A)) == [
        ModelCardAdded(card=f.added_card(n_layers=4), node_id=A)]


@pytest.mark.parametrize(("update", "why"), [
    ({"n_layers": 0}, "n_layers is 0"),
    ({"num_key_value_heads": 3}, "cannot share 3 key/value heads"),
    ({"context_length": 1 << 30}, "beyond any model's"),
    ({"sources": []}, "names no weights"),
    ({"sources": [ModelSource(format="gguf", filename="../../etc/passwd", size_bytes=9)]},
     "not inside the store"),
    ({"sources": [ModelSource(format="gguf", filename="/abs.gguf", size_bytes=9)]},
     "not inside the store"),
    ({"sources": [ModelSource(format="gguf", filename="a/b.gguf", size_bytes=0)]},
     "0 bytes"),
])
def test_malformed_figures_are_refused(update: dict[str, object], why: str) -> None:
    card = f.added_card().model_copy(update=update)
    assert why in (malformed_card(card) or "")
    assert why in rejection(handle(State(), add(card)))


def test_the_builtin_cards_are_well_formed() -> None:
    assert all(malformed_card(card) is None for card in CATALOG.cards())


def test_remove_drops_only_a_holder_that_holds_it() -> None:
    remove = RemoveModelCard(command_id=CommandId("c"), node_id=B,
                             model_id=ModelId("tiny-added"))
    assert handle(State(), remove) == []
    state = f.state_with(ModelCardAdded(card=f.added_card(), node_id=B))
    assert handle(state, remove) == [ModelCardRemoved(model_id=ModelId("tiny-added"),
                                                      node_id=B)]


def test_only_a_member_announces_and_only_its_own_store() -> None:
    def envelope(origin: NodeId, node: NodeId) -> CommandEnvelope:
        return CommandEnvelope(origin=origin, command=add(f.added_card(), node))

    members = f.state_with(MembershipAgreed(members=[A, B]))
    assert refused_card_sender(members, envelope(A, A)) is None
    assert refused_card_sender(members, envelope(B, A)) == "another_nodes_store"
    assert refused_card_sender(members, envelope(NodeId("node-z"), NodeId("node-z"))) == \
        "not_a_member"
    revoked = f.state_with(NodeRevoked(node_id=B), start=members)
    assert refused_card_sender(revoked, envelope(B, B)) == "revoked_node"
    # A new cluster has agreed no membership yet: the router's signature check is all.
    assert refused_card_sender(State(), envelope(B, B)) is None
