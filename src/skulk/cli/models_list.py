"""`skulk models list`: the catalogue, one line a model, and where this node holds each."""

import re
from pathlib import Path

from skulk.models.catalog import ModelCatalog
from skulk.shared.types.model_cards import ModelCard

APPROXIMATE = "~"


def list_models(data_dir: Path) -> int:
    """Print the catalogue of this node's data dir."""
    for line in catalogue_lines(ModelCatalog.builtin(data_dir / "models")):
        print(line)
    return 0


def catalogue_lines(catalog: ModelCatalog) -> list[str]:
    """A header, a line per card (id, parameters, each format's size, the formats held
    here, a pipeline stage's copy with its layers) and under it the path of each; a
    footnote for guessed sizes."""
    cards = sorted(catalog.cards(), key=_natural_order)
    width = max([len("MODEL"), *(len(card.model_id) for card in cards)])
    lines = [f"{'MODEL':<{width}}  {'PARAMS':>6}  {'FORMATS (size)':<30}  HERE"]
    guessed = False
    for card in cards:
        held = {s.format: path for s in card.sources
                if (path := catalog.local_path(card, s.format)) is not None}
        sizes = []
        for format in dict.fromkeys(s.format for s in card.sources):
            source = card.source_for(format)
            assert source is not None  # the format comes from the card's own sources
            approximate = "sources.size_bytes" in card.unverified and format not in held
            guessed |= approximate
            mark = APPROXIMATE if approximate else ""
            sizes.append(f"{format} {mark}{_size(source.size_bytes)}")
        stages = {f"{e.format} layers {e.layers[0]}-{e.layers[1]}": catalog.models_dir
                  / e.directory for e in catalog.stored()
                  if e.model_id == card.model_id and e.layers is not None}
        here = ", ".join([*held, *stages]) or "-"
        lines.append(f"{card.model_id:<{width}}  {_parameters(card):>6}  "
                     f"{', '.join(sizes):<30}  {here}")
        lines.extend(f"    {format:<5} {path}" for format, path in held.items())
        lines.extend(f"    {stage} {path}" for stage, path in stages.items())
    if guessed:
        lines.append(f"{APPROXIMATE} size as the card guesses it; the hub gives the real one "
                     "at the first pull (skulk models pull MODEL)")
    return lines


def _natural_order(card: ModelCard) -> list[str | int]:
    """`qwen2.5-7b` before `qwen2.5-14b`: digit runs compare as numbers."""
    return [int(part) if part.isdigit() else part
            for part in re.split(r"(\d+)", card.model_id.lower())]


def _size(size_bytes: int) -> str:
    return (f"{size_bytes / 1e9:.1f} GB" if size_bytes >= 1e9
            else f"{size_bytes / 1e6:.0f} MB")


def _parameters(card: ModelCard) -> str:
    if card.parameters is None:
        return "-"
    if card.parameters >= 1e9:
        return f"{card.parameters / 1e9:.1f}B"
    return f"{card.parameters / 1e6:.0f}M"
