"""Where a rank's weights can come from, in the order to try them: pure."""

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Protocol

from skulk.models.store.card_hub import hub_source
from skulk.models.store.catalogue_pull import pull_request_for
from skulk.models.store.layer_files import Layers
from skulk.models.store.manifest import StoreEntry
from skulk.models.store.pull import PullRequest, pull
from skulk.shared.types.model_cards import ModelCard, ModelFormat

Progress = Callable[[int, int], None]


class WeightSource(Protocol):
    """Something that can put a model's files into a store, verified."""

    @property
    def label(self) -> str: ...

    def fetch(self, models_dir: Path, progress: Progress) -> StoreEntry: ...


@dataclass(frozen=True)
class HubSource:
    """The model hub, through `huggingface_hub` (`HF_ENDPOINT`, `HF_TOKEN`): the same pull
    `skulk models pull` makes."""

    request: PullRequest

    @property
    def label(self) -> str:
        return f"hub {self.request.repo}"

    def fetch(self, models_dir: Path, progress: Progress) -> StoreEntry:
        return pull(models_dir, self.request, progress).entry


def hub_sources(card: ModelCard, format: ModelFormat, layers: Layers | None = None
                ) -> list[WeightSource]:
    """The hub source of a card's weights in `format` (its default quantization; only a
    pipeline stage's files given `layers`), or none when the card names no hub repository
    for it."""
    if hub_source(card, format) is None:
        return []
    return [HubSource(replace(pull_request_for(card.model_id, card, format=format),
                              layers=layers))]
