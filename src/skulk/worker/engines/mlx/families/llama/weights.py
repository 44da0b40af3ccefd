"""Which of a Llama checkpoint's tensors one pipeline stage needs, and their local names.

A stage is built as a small module of its own (`layers.0 ..`, `embed_tokens`, `norm`,
`lm_head`), so checkpoint names are renamed to it: `model.layers.12.mlp.up_proj.weight`
becomes `layers.2.mlp.up_proj.weight` on the stage that starts at layer 10. Only the
names a stage keeps are ever read into memory.
"""

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TypeVar

Value = TypeVar("Value")


@dataclass(frozen=True)
class StageSpec:
    """The part of the model one pipeline rank holds."""

    start_layer: int
    end_layer: int
    embeds: bool
    """This stage turns token ids into hidden states (the first rank)."""
    heads: bool
    """This stage applies the final norm and the output head (the last rank)."""
    tied: bool
    """The output head is the embedding matrix (no lm_head tensor in the checkpoint)."""

    @property
    def n_layers(self) -> int:
        return self.end_layer - self.start_layer

    @property
    def needs_embedding(self) -> bool:
        """The embedding matrix is loaded to embed, or to serve as the tied head."""
        return self.embeds or (self.heads and self.tied)


def stage_spec(
    *, rank: int, size: int, start_layer: int, end_layer: int, n_layers: int, tied: bool
) -> StageSpec:
    """Check a rank's layer range against the model and say what the stage holds."""
    if not 0 <= start_layer < end_layer <= n_layers:
        raise ValueError(
            f"layers [{start_layer}, {end_layer}) are not a non-empty range of the "
            f"model's {n_layers} layers")
    if rank == 0 and start_layer != 0:
        raise ValueError(f"rank 0 embeds the tokens, so it must start at layer 0, "
                         f"not {start_layer}")
    if rank == size - 1 and end_layer != n_layers:
        raise ValueError(f"the last rank applies the head, so it must end at layer "
                         f"{n_layers}, not {end_layer}")
    return StageSpec(start_layer=start_layer, end_layer=end_layer, embeds=rank == 0,
                     heads=rank == size - 1, tied=tied)


def local_path(path: str, spec: StageSpec) -> str | None:
    """The stage's name for a checkpoint tensor or module path; None if it is not needed.

    Raises ValueError for a name a Llama checkpoint does not have, so a checkpoint of
    another shape fails loudly instead of loading half its weights.
    """
    parts = path.split(".")
    if parts[-1] == "inv_freq":
        return None  # precomputed rotary frequencies: the model computes its own
    if parts[:2] == ["model", "layers"] and len(parts) > 2 and parts[2].isdigit():
        layer = int(parts[2])
        if not spec.start_layer <= layer < spec.end_layer:
            return None
        return ".".join(["layers", str(layer - spec.start_layer), *parts[3:]])
    if parts[:2] == ["model", "embed_tokens"]:
        return ".".join(parts[1:]) if spec.needs_embedding else None
    if parts[:2] == ["model", "norm"]:
        return ".".join(parts[1:]) if spec.heads else None
    if parts[0] == "lm_head":
        # A tied checkpoint may still carry a copy of the head; the embedding serves.
        return path if spec.heads and not spec.tied else None
    raise ValueError(f"{path!r} is not a tensor of a Llama checkpoint")


def select_weights(weights: Mapping[str, Value], spec: StageSpec) -> dict[str, Value]:
    """The tensors the stage needs, under their local names."""
    selected: dict[str, Value] = {}
    for name, value in weights.items():
        local = local_path(name, spec)
        if local is not None:
            selected[local] = value
    return selected
