"""This node's store, told to the cluster: watch the store directory and announce the
card of every model it holds that no built-in card describes (`AddModelCard`), and say
when one is gone (`RemoveModelCard`).

The decision is a pure comparison of the store with the replicated State, made again
every second, so an announcement lost with a master, or a store changed while the node
was down, is put right without any bookkeeping of what was sent.
"""

import time
from collections.abc import Callable
from pathlib import Path

import anyio
from loguru import logger

from skulk.models.catalog import ModelCatalog
from skulk.models.store.manifest import MANIFEST_FILE, StoreEntry
from skulk.shared.channels import Sender
from skulk.shared.types.commands import AddModelCard, Command, RemoveModelCard
from skulk.shared.types.ids import ModelId, NodeId, new_command_id
from skulk.shared.types.model_cards import ModelCard
from skulk.shared.types.state import State
from skulk.shared.views import ReplicaView

POLL_SECONDS = 1.0
# A command the State does not reflect yet is sent again after this long (the master may
# have changed, or the command been lost).
RESEND_SECONDS = 5.0


def store_signature(models_dir: Path) -> tuple[tuple[str, int], ...]:
    """Each stored model's directory and manifest time: cheap to read every second, and
    it changes whenever a model is added, pulled, fetched or removed (manifests are
    written last and atomically)."""
    if not models_dir.is_dir():
        return ()
    signature = []
    for directory in sorted(models_dir.iterdir()):
        try:
            signature.append((directory.name, (directory / MANIFEST_FILE).stat().st_mtime_ns))
        except OSError:
            continue  # not a model directory, or one still being written
    return tuple(signature)


def announced_cards(stored: list[StoreEntry],
                    builtin: Callable[[str], ModelCard | None]) -> dict[ModelId, ModelCard]:
    """The cards this node's store gives the cluster: derived cards of models no built-in
    card names (the first format stored wins when a model is stored in two)."""
    cards: dict[ModelId, ModelCard] = {}
    for entry in stored:
        if entry.card is not None and builtin(entry.model_id) is None:
            cards.setdefault(entry.model_id, entry.card)
    return cards


def card_commands(node_id: NodeId, cards: dict[ModelId, ModelCard],
                  state: State) -> tuple[list[Command], list[ModelId]]:
    """The commands that make `state` agree with this node's `cards`, and the ids it must
    not announce because another node holds a different model under them."""
    commands: list[Command] = []
    clashes = []
    for model_id, card in cards.items():
        known = state.model_cards.get(model_id)
        holders = state.model_card_holders.get(model_id, [])
        if known == card and node_id in holders:
            continue
        if known is not None and known != card and any(n != node_id for n in holders):
            clashes.append(model_id)
            continue
        commands.append(AddModelCard(command_id=new_command_id(), node_id=node_id,
                                     card=card))
    for model_id, holders in state.model_card_holders.items():
        if node_id in holders and model_id not in cards:
            commands.append(RemoveModelCard(command_id=new_command_id(), node_id=node_id,
                                            model_id=model_id))
    return commands, clashes


def _key(command: Command) -> tuple[str, str]:
    if isinstance(command, AddModelCard):
        return command.kind, command.card.model_dump_json()
    assert isinstance(command, RemoveModelCard)
    return command.kind, command.model_id


class StoreWatcher:
    """Refreshes the catalogue when the store changes, and (when `announce`) keeps the
    cluster's cards in step with the store. Does no I/O until `run`."""

    def __init__(self, *, node_id: NodeId, catalog: ModelCatalog, replica: ReplicaView,
                 commands: Sender[Command], announce: bool = True,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._node_id = node_id
        self._catalog = catalog
        self._replica = replica
        self._commands = commands
        self._announce = announce
        self._clock = clock
        self._signature: tuple[tuple[str, int], ...] | None = None
        self._sent: dict[tuple[str, str], float] = {}
        self._warned: set[ModelId] = set()

    async def run(self) -> None:
        while True:
            await self.check_once()
            await anyio.sleep(POLL_SECONDS)

    async def check_once(self) -> None:
        signature = store_signature(self._catalog.models_dir)
        if signature != self._signature:
            self._signature = signature
            self._catalog.refresh()
        if not self._announce or self._replica.session is None:
            return
        cards = announced_cards(self._catalog.stored(), self._catalog.builtin_card)
        commands, clashes = card_commands(self._node_id, cards, self._replica.state)
        for model_id in set(clashes) - self._warned:
            logger.warning("not announcing {}: another node holds a different model under "
                           "that id; add it again under another id (--model-id)", model_id)
        self._warned = set(clashes)
        now = self._clock()
        pending = {_key(c) for c in commands}
        self._sent = {k: t for k, t in self._sent.items() if k in pending}
        for command in commands:
            key = _key(command)
            if now - self._sent.get(key, -RESEND_SECONDS) < RESEND_SECONDS:
                continue
            self._sent[key] = now
            await self._commands.send(command)
