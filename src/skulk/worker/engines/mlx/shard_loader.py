"""Load the part of a model this rank runs, through the family registry."""

import json
from pathlib import Path
from typing import Any, Literal

from skulk.worker.engines.mlx import mlx_api
from skulk.worker.engines.mlx.collectives import Group
from skulk.worker.engines.mlx.families.registry import UnknownModelFamily, family_for_config
from skulk.worker.engines.mlx.shard import ModelShard, WholeModelShard

Sharding = Literal["pipeline", "tensor"]


def read_config(model_dir: Path) -> dict[str, Any]:
    """config.json of an MLX model directory."""
    path = model_dir / "config.json"
    if not path.is_file():
        raise FileNotFoundError(f"{model_dir} has no config.json: is it an MLX model directory?")
    config: dict[str, Any] = json.loads(path.read_text())
    return config


def _whole(model_dir: Path, config: dict[str, Any], group: Group) -> ModelShard:
    """mlx-lm's whole model, for any family it runs, unless the family runs it itself."""
    try:
        family = family_for_config(config)
    except UnknownModelFamily:
        family = None
    own = family.load_whole(model_dir, config, group) if family is not None else None
    return own if own is not None else WholeModelShard(mlx_api.load_model(model_dir), group)


def load_shard(
    model_dir: Path, group: Group, start_layer: int, end_layer: int, sharding: Sharding
) -> ModelShard:
    """This rank's shard: layers [start_layer, end_layer) of a pipeline, or its share of
    every layer of a tensor split (which needs start 0 and end = all layers).

    Every rank of the group calls this with its own range. A group of one gets the whole
    model in one process.
    """
    config = read_config(model_dir)
    n_layers = int(config["num_hidden_layers"])
    if sharding == "tensor" and (start_layer, end_layer) != (0, n_layers):
        raise ValueError(f"a tensor split holds every layer: expected [0, {n_layers}), "
                         f"got [{start_layer}, {end_layer})")
    if group.size == 1:
        if (start_layer, end_layer) != (0, n_layers):
            raise ValueError(f"a single rank runs every layer: expected [0, {n_layers}), "
                             f"got [{start_layer}, {end_layer})")
        return _whole(model_dir, config, group)
    family = family_for_config(config)  # a split needs Skulk's knowledge of the family
    if sharding == "pipeline":
        return family.load_pipeline(model_dir, config, group, start_layer, end_layer)
    return family.load_tensor(model_dir, config, group)
