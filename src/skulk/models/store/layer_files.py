"""Which safetensors files a pipeline stage needs: pure, from the checkpoint's index.

A sharded checkpoint ships `model.safetensors.index.json`, whose `weight_map` names the
file holding each tensor. A stage of layers [start, end) needs the files holding
`model.layers.{i}.` tensors for those layers, plus every file holding a tensor outside
the layers (embeddings, final norm, lm_head): which stage uses those depends on the
family and on tied embeddings, and fetching them everywhere is simple and always correct.
"""

import json
import re
from collections.abc import Mapping

INDEX_FILE = "model.safetensors.index.json"
_LAYER = re.compile(r"(?:^|\.)layers\.(\d+)\.")

Layers = tuple[int, int]


def layer_of(tensor: str) -> int | None:
    """The decoder layer a tensor belongs to (`model.layers.3.mlp...` → 3), or None for a
    tensor outside the layers."""
    found = _LAYER.search(tensor)
    return int(found.group(1)) if found else None


def files_for_layers(weight_map: Mapping[str, str], start: int, end: int) -> set[str]:
    """The files of `weight_map` (tensor → file) a stage of layers [start, end) needs:
    those holding its layers' tensors and those holding any tensor outside the layers."""
    if not 0 <= start < end:
        raise ValueError(f"a stage holds layers [start, end) with 0 <= start < end, "
                         f"not [{start}, {end})")
    needed = set()
    for tensor, file in weight_map.items():
        layer = layer_of(tensor)
        if layer is None or start <= layer < end:
            needed.add(file)
    return needed


def weight_map_of(index_json: bytes) -> dict[str, str]:
    """The `weight_map` of a `model.safetensors.index.json`; raises ValueError naming what
    is wrong with a malformed one."""
    try:
        weight_map = json.loads(index_json)["weight_map"]
    except (ValueError, KeyError, TypeError) as error:
        raise ValueError(f"{INDEX_FILE} has no readable weight_map: {error}") from error
    if not isinstance(weight_map, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in weight_map.items()):
        raise ValueError(f"{INDEX_FILE}'s weight_map is not a map of tensor names to files")
    return weight_map


def covers(held: Layers | None, wanted: Layers | None) -> bool:
    """Whether a copy of layers `held` (None: the whole model) serves a load of `wanted`
    (None: the whole model)."""
    if held is None:
        return True
    return wanted is not None and held[0] <= wanted[0] and wanted[1] <= held[1]


def is_weight_file(name: str) -> bool:
    return name.endswith(".safetensors")


def layers_directory(directory: str, layers: Layers | None) -> str:
    """The store directory of a copy holding `layers` of the model whose whole copy lives
    in `directory` (None: the whole copy's own name)."""
    whole = re.sub(r"-layers-\d+-\d+$", "", directory)
    return whole if layers is None else f"{whole}-layers-{layers[0]}-{layers[1]}"
