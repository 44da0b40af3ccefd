"""A catalogue card as the hub corrected it: the figures of the weights a node pulled.

Built-in cards are written before any hub is asked, so their sizes (and sometimes their
architecture figures) are guesses. A pull under the card's id keeps, in its store entry,
the card derived from what arrived: the real file sizes, and the GGUF metadata or the
config.json. The catalogue serves the built-in card with those figures put in: the held
source's size and the architecture, with the corrected fields no longer `unverified`.
"""

from collections.abc import Iterable

from skulk.models.store.manifest import StoreEntry
from skulk.shared.types.model_cards import ModelCard, ModelSource

# The architecture figures a derived card carries, as card field names.
_ARCHITECTURE = ("n_layers", "hidden_size", "num_attention_heads", "num_key_value_heads",
                 "context_length", "head_dim")


def corrected_card(card: ModelCard, entries: Iterable[StoreEntry]) -> ModelCard:
    """`card` with the figures of every store entry pulled from the hub under its id put
    in (weights added from disk or imported correct nothing: they may be a variant)."""
    pulled = [entry for entry in entries if entry.model_id == card.model_id
              and entry.card is not None and entry.repo is not None]
    for entry in pulled:
        assert entry.card is not None  # filtered above
        card = _with_entry(card, entry, entry.card)
    if pulled and all(s.repo is None or any(_is_held(s, e) for e in pulled)
                      for s in card.sources):
        sources_checked = {"sources.size_bytes", "sources.repo", "sources.filename"}
        card = card.model_copy(update={
            "unverified": [f for f in card.unverified if f not in sources_checked]})
    return card


def _with_entry(card: ModelCard, entry: StoreEntry, derived: ModelCard) -> ModelCard:
    stored = derived.source_for(entry.format) or ModelSource(
        format=entry.format, filename=entry.directory, size_bytes=entry.size_bytes)
    sources = _sources_with_held_first(card.sources, entry, stored)
    update: dict[str, object] = {"sources": sources}
    for field in _ARCHITECTURE:
        value = getattr(derived, field)
        if value is not None:
            update[field] = value
    if entry.format == "mlx" and derived.model_type is not None:
        update["model_type"] = derived.model_type
    corrected = set(update) - {"sources"}
    update["unverified"] = [f for f in card.unverified if f not in corrected]
    return card.model_copy(update=update)


def _sources_with_held_first(sources: list[ModelSource], entry: StoreEntry,
                             stored: ModelSource) -> list[ModelSource]:
    """The source the entry holds gets the real size and goes first among its format's
    (placement sizes a format by its first source); weights the card does not list (a
    quantization it does not name, another repository) are added as the store holds
    them."""
    listed = next((s for s in sources if _is_held(s, entry)), None)
    held = (listed.model_copy(update={"size_bytes": stored.size_bytes}) if listed is not None
            else stored.model_copy(update={"repo": entry.repo, "quant": entry.quant}))
    rest = [s for s in sources if not _is_held(s, entry)]
    first_of_format = next((i for i, s in enumerate(rest) if s.format == entry.format),
                           len(rest))
    return [*rest[:first_of_format], held, *rest[first_of_format:]]


def _is_held(source: ModelSource, entry: StoreEntry) -> bool:
    if source.format != entry.format or source.repo is None or source.repo != entry.repo:
        return False
    if entry.format != "gguf":
        return True
    return (source.quant or "").upper() == (entry.quant or "").upper()
