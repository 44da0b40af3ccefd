from skulk.shared.types.events import ModelCardAdded, ModelCardRemoved, NodeRevoked
from skulk.shared.types.ids import ModelId, NodeId
from skulk.testing import factories as f

A, B = NodeId("node-a"), NodeId("node-b")
TINY = ModelId("tiny-added")


def test_an_added_card_is_known_with_its_holder_and_a_resend_changes_nothing() -> None:
    once = f.state_with(ModelCardAdded(card=f.added_card(), node_id=A))
    twice = f.state_with(ModelCardAdded(card=f.added_card(), node_id=A), start=once)
    assert once.model_cards == {TINY: f.added_card()}
    assert once.model_card_holders == {TINY: [A]}
    assert twice.model_dump(exclude={"last_event_applied_idx"}) == \
        once.model_dump(exclude={"last_event_applied_idx"})


def test_a_card_goes_when_its_last_holder_removes_it() -> None:
    state = f.state_with(ModelCardAdded(card=f.added_card(), node_id=B),
                         ModelCardAdded(card=f.added_card(), node_id=A),
                         ModelCardRemoved(model_id=TINY, node_id=A))
    assert state.model_card_holders == {TINY: [B]} and TINY in state.model_cards
    state = f.state_with(ModelCardRemoved(model_id=TINY, node_id=B),
                         ModelCardRemoved(model_id=TINY, node_id=B), start=state)
    assert state.model_cards == {} and state.model_card_holders == {}


def test_a_changed_card_starts_over_with_its_announcer_alone() -> None:
    changed = f.added_card(n_layers=4)
    state = f.state_with(ModelCardAdded(card=f.added_card(), node_id=A),
                         ModelCardAdded(card=changed, node_id=A))
    assert state.model_cards[TINY] == changed and state.model_card_holders[TINY] == [A]


def test_a_revoked_node_takes_its_cards_with_it() -> None:
    other = f.added_card("other")
    state = f.state_with(ModelCardAdded(card=f.added_card(), node_id=A),
                         ModelCardAdded(card=other, node_id=A),
                         ModelCardAdded(card=other, node_id=B),
                         NodeRevoked(node_id=A))
    assert state.model_cards == {ModelId("other"): other}
    assert state.model_card_holders == {ModelId("other"): [B]}
