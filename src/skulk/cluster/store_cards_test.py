"""The store watcher against a real store directory and a State built by apply."""

from dataclasses import dataclass
from pathlib import Path

import pytest

from skulk.cluster.store_cards import RESEND_SECONDS, StoreWatcher, card_commands
from skulk.models.catalog import ModelCatalog
from skulk.models.store.add import AddRequest, add
from skulk.models.store.remove import remove
from skulk.shared.types.commands import AddModelCard, Command, RemoveModelCard
from skulk.shared.types.events import ModelCardAdded
from skulk.shared.types.ids import ModelId, NodeId, SessionId
from skulk.shared.types.state import State
from skulk.testing import factories as f
from skulk.testing.channels import Collected
from skulk.testing.models import bundled_gguf

A, B = NodeId("node-a"), NodeId("node-b")
TINY = ModelId("tiny-added")


@dataclass
class Replica:
    state: State
    session: SessionId | None


def test_commands_bring_the_state_in_step_with_the_store() -> None:
    card = f.added_card()
    commands, clashes = card_commands(A, {TINY: card}, State())
    assert [type(c) for c in commands] == [AddModelCard] and clashes == []
    held = f.state_with(ModelCardAdded(card=card, node_id=A))
    assert card_commands(A, {TINY: card}, held) == ([], [])
    commands, _ = card_commands(A, {}, held)
    assert [(type(c), c.model_id) for c in commands if isinstance(c, RemoveModelCard)] == [
        (RemoveModelCard, TINY)]
    # Another node's different model under the same id: not announced, reported instead.
    assert card_commands(B, {TINY: f.added_card(n_layers=5)}, held) == ([], [TINY])


@pytest.mark.anyio
async def test_the_watcher_announces_an_added_model_and_its_removal(tmp_path: Path) -> None:
    models = tmp_path / "models"
    catalog = ModelCatalog.builtin(models)
    commands: Collected[Command] = Collected()
    sent = commands.items
    now = [0.0]
    replica = Replica(State(), SessionId("s"))
    watcher = StoreWatcher(node_id=A, catalog=catalog, replica=replica, commands=commands,
                           clock=lambda: now[0])
    await watcher.check_once()
    assert sent == []

    add(models, AddRequest(bundled_gguf(), model_id="smol-added"), catalog.builtin_card)
    await watcher.check_once()
    assert catalog.resolve("smol-added") is not None  # the catalogue was refreshed
    assert len(sent) == 1 and isinstance(sent[0], AddModelCard)
    card = sent[0].card
    assert card.model_id == "smol-added"

    await watcher.check_once()  # not yet in the State, but sent a moment ago
    assert len(sent) == 1
    now[0] += RESEND_SECONDS
    await watcher.check_once()  # still not in the State: sent again
    assert len(sent) == 2

    replica.state = f.state_with(ModelCardAdded(card=card, node_id=A))
    await watcher.check_once()
    assert len(sent) == 2

    remove(models, "smol-added", catalog.builtin_card)
    await watcher.check_once()
    assert isinstance(sent[-1], RemoveModelCard) and sent[-1].model_id == "smol-added"
    assert catalog.resolve("smol-added") is None


@pytest.mark.anyio
async def test_a_node_without_a_worker_or_a_master_announces_nothing(tmp_path: Path) -> None:
    models = tmp_path / "models"
    catalog = ModelCatalog.builtin(models)
    add(models, AddRequest(bundled_gguf(), model_id="smol-added"), catalog.builtin_card)
    commands: Collected[Command] = Collected()
    for announce, following in [(False, True), (True, False)]:
        replica = Replica(State(), SessionId("s") if following else None)
        await StoreWatcher(node_id=A, catalog=catalog, replica=replica, commands=commands,
                           announce=announce).check_once()
    assert commands.items == [] and catalog.resolve("smol-added") is not None
