"""Which part of a model one pipeline rank holds, and the local names of its tensors.

A stage is mlx-lm's whole model class with its layer list cut to the stage's layers, so
`model.layers.12.mlp.up_proj.weight` is `model.layers.2.mlp.up_proj.weight` on the stage
that starts at layer 10; names outside the layer list keep their own.
"""

from dataclasses import dataclass

LAYERS_PREFIX = "model.layers"
"""Where the decoder layers sit in every family's mlx-lm model (`Model.model.layers`)."""


@dataclass(frozen=True)
class StageSpec:
    """The part of the model one pipeline rank holds."""

    start_layer: int
    end_layer: int
    embeds: bool
    """This stage turns token ids into hidden states (the first rank)."""
    heads: bool
    """This stage applies the final norm and the output head (the last rank)."""

    @property
    def n_layers(self) -> int:
        return self.end_layer - self.start_layer


def stage_spec(*, rank: int, size: int, start_layer: int, end_layer: int,
               n_layers: int) -> StageSpec:
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
                     heads=rank == size - 1)


def layer_local_name(path: str, spec: StageSpec) -> str | None:
    """The stage's name for a checkpoint path inside the layer list (renumbered from the
    stage's first layer), None for a layer of another stage; other paths unchanged."""
    prefix = LAYERS_PREFIX + "."
    if not path.startswith(prefix):
        return path
    index, _, rest = path[len(prefix):].partition(".")
    if not index.isdigit():
        return path
    layer = int(index)
    if not spec.start_layer <= layer < spec.end_layer:
        return None
    return f"{prefix}{layer - spec.start_layer}" + (f".{rest}" if rest else "")
