"""`skulk models list`: the catalogue, one line a model, and where this node holds each;
with `--cluster`, what every node's store holds, read through a running node."""

import re
from collections.abc import Mapping
from pathlib import Path

from skulk.cli.units import layers_text, size_text
from skulk.models.catalog import ModelCatalog
from skulk.shared.types.ids import NodeId
from skulk.shared.types.model_cards import ModelCard
from skulk.shared.types.telemetry import NodeTelemetry

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
            sizes.append(f"{format} {mark}{size_text(source.size_bytes)}")
        stages = {f"{e.format} {layers_text(*e.layers)}": catalog.models_dir
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


def cluster_lines(readings: Mapping[NodeId, NodeTelemetry]) -> list[str]:
    """What every node's store holds, from the nodes' readings: a line per copy (model,
    node, format, layers of a stage's copy, size) and a line per pull under way."""
    rows = sorted(
        (held.model_id, node_id, held.format,
         "whole" if held.layers is None else layers_text(*held.layers),
         size_text(sum(f.size_bytes for f in held.files)))
        for node_id, reading in readings.items() for held in reading.held_models)
    pulls = sorted(
        (pull.model_id, node_id, f"pulling {pull.repo}",
         f"{size_text(pull.done_bytes)} of {size_text(pull.total_bytes)}")
        for node_id, reading in readings.items() for pull in reading.pulls)
    if not rows and not pulls:
        return ["no node's store holds a model (the bundled one ships with Skulk itself)"]
    width = max(len("MODEL"), *(len(r[0]) for r in [*rows, *pulls]))
    nodes = max(len("NODE"), *(len(r[1]) for r in [*rows, *pulls]))
    lines = [f"{'MODEL':<{width}}  {'NODE':<{nodes}}  HOLDS"]
    lines += [f"{model:<{width}}  {node:<{nodes}}  {format} {part}, {size}"
              for model, node, format, part, size in rows]
    lines += [f"{model:<{width}}  {node:<{nodes}}  {what}: {amount}"
              for model, node, what, amount in pulls]
    return lines


def _natural_order(card: ModelCard) -> list[str | int]:
    """`qwen2.5-7b` before `qwen2.5-14b`: digit runs compare as numbers."""
    return [int(part) if part.isdigit() else part
            for part in re.split(r"(\d+)", card.model_id.lower())]


def _parameters(card: ModelCard) -> str:
    if card.parameters is None:
        return "-"
    if card.parameters >= 1e9:
        return f"{card.parameters / 1e9:.1f}B"
    return f"{card.parameters / 1e6:.0f}M"
