"""Where a catalogue card's weights sit on the hub: pure, from the card alone.

The worker's fetch step builds its `HubSource` from this, and `skulk models pull <id>`
its pull request, so both fetch the same repository and quantization for a card.
"""

from skulk.shared.types.model_cards import ModelCard, ModelFormat, ModelSource


def hub_model_source(card: ModelCard, format: ModelFormat, quant: str | None = None
                     ) -> ModelSource | None:
    """The card's hub source of `format`: the one of quantization `quant` when the card
    lists it, else the format's first (default) hub source; None when the card names no
    hub repository for `format`."""
    on_hub = [s for s in card.sources if s.format == format and s.repo is not None]
    if quant is not None:
        wanted = quant.upper()
        listed = next((s for s in on_hub if (s.quant or "").upper() == wanted), None)
        if listed is not None:
            return listed
    return on_hub[0] if on_hub else None


def hub_source(card: ModelCard, format: ModelFormat, quant: str | None = None
               ) -> tuple[str, str | None] | None:
    """(repository, quantization) to fetch `card` in `format` from the hub, or None.

    A GGUF quantization the card does not list is asked of the default GGUF repository
    (quantizers publish many more than a card names)."""
    source = hub_model_source(card, format, quant)
    if source is None or source.repo is None:
        return None
    chosen = quant.upper() if quant is not None and format == "gguf" else source.quant
    return source.repo, chosen


def hub_file_pattern(card: ModelCard, format: ModelFormat, quant: str | None = None
                     ) -> str | None:
    """The GGUF file name (or pattern) the card gives for that quantization, if any."""
    source = hub_model_source(card, format, quant)
    if source is None or format != "gguf":
        return None
    if quant is not None and (source.quant or "").upper() != quant.upper():
        return None  # a quant the card does not list: its file name is not known
    return source.filename
