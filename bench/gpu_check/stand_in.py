"""A stand-in for the bundled model on the device: SmolLM2-135M's GGUF (94 MiB, more
than a command takes along) rebuilt there from a skeleton of a few hundred KiB.

The skeleton is the real file's metadata (architecture, tokenizer, chat template) with
each tensor's name, shape and type, and no weights. The stand-in has the same tensors of
the same types, so it loads, offloads and computes exactly as the real one does; its
weights are random (norms 1), so its words are noise. Constrained answers (a JSON schema)
still come out valid, since the grammar, not the weights, decides them.

    python -m bench.gpu_check.stand_in skeleton REAL.gguf SKELETON.gguf.xz
    python -m bench.gpu_check.stand_in model SKELETON.gguf.xz STAND_IN.gguf
"""

import argparse
import json
import lzma
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

TENSORS_KEY = "skulk.stand_in.tensors"
# Weights drawn uniformly from ±SPREAD: small enough that activations stay finite.
SPREAD = 0.05


def _field_value(field: Any) -> Any:
    return field.contents()


def write_skeleton(real: Path, skeleton: Path) -> None:
    """The real GGUF's metadata and tensor list, without weights, xz-compressed."""
    import gguf

    reader = gguf.GGUFReader(str(real))
    architecture = str(_field_value(reader.fields["general.architecture"]))
    with tempfile.TemporaryDirectory() as scratch:
        plain = Path(scratch) / "skeleton.gguf"
        writer = gguf.GGUFWriter(str(plain), architecture)
        for key, field in reader.fields.items():
            if key.startswith("GGUF.") or key == "general.architecture":
                continue
            value_type = field.types[0]
            value = _field_value(field)
            if value_type == gguf.GGUFValueType.ARRAY:
                writer.add_array(key, value)
            else:
                writer.add_key_value(key, value, value_type)
        specs = [{"name": t.name, "shape": [int(n) for n in t.shape],
                  "type": t.tensor_type.name} for t in reader.tensors]
        writer.add_string(TENSORS_KEY, json.dumps(specs))
        writer.write_header_to_file()
        writer.write_kv_data_to_file()
        writer.close()
        with plain.open("rb") as source, lzma.open(skeleton, "wb", preset=9) as target:
            shutil.copyfileobj(source, target)


def random_blocks(type_name: str, values: int, rng: np.random.Generator) -> np.ndarray:
    """`values` weights in `type_name`'s block layout, uniform in ±SPREAD, as raw bytes."""
    import gguf

    quant = gguf.GGMLQuantizationType[type_name]
    if quant == gguf.GGMLQuantizationType.F32:
        return np.ones(values, dtype=np.float32).view(np.uint8)
    if quant == gguf.GGMLQuantizationType.F16:
        return rng.uniform(-SPREAD, SPREAD, values).astype(np.float16).view(np.uint8)
    blocks = values // 32
    if quant == gguf.GGMLQuantizationType.Q8_0:  # f16 scale, 32 int8
        scale = np.full((blocks, 1), SPREAD / 127, dtype=np.float16).view(np.uint8)
        weights = rng.integers(-127, 128, (blocks, 32), dtype=np.int8).view(np.uint8)
        return np.concatenate([scale, weights], axis=1).reshape(-1)
    if quant == gguf.GGMLQuantizationType.Q4_1:  # f16 scale, f16 minimum, 32 nibbles
        scale = np.full((blocks, 1), 2 * SPREAD / 15, dtype=np.float16).view(np.uint8)
        minimum = np.full((blocks, 1), -SPREAD, dtype=np.float16).view(np.uint8)
        nibbles = rng.integers(0, 256, (blocks, 16), dtype=np.uint8)
        return np.concatenate([scale, minimum, nibbles], axis=1).reshape(-1)
    raise ValueError(f"the stand-in has no random weights of type {type_name}")


def write_model(skeleton: Path, model: Path, seed: int = 0) -> None:
    """The stand-in GGUF from the skeleton, with seeded random weights."""
    import gguf

    with tempfile.TemporaryDirectory() as scratch:
        plain = Path(scratch) / "skeleton.gguf"
        with lzma.open(skeleton, "rb") as source, plain.open("wb") as target:
            shutil.copyfileobj(source, target)
        reader = gguf.GGUFReader(str(plain))
        architecture = str(_field_value(reader.fields["general.architecture"]))
        specs = json.loads(str(_field_value(reader.fields[TENSORS_KEY])))
        writer = gguf.GGUFWriter(str(model), architecture)
        for key, field in reader.fields.items():
            if key.startswith("GGUF.") or key in ("general.architecture", TENSORS_KEY):
                continue
            if field.types[0] == gguf.GGUFValueType.ARRAY:
                writer.add_array(key, _field_value(field))
            else:
                writer.add_key_value(key, _field_value(field), field.types[0])
        rng = np.random.default_rng(seed)
        for spec in specs:
            shape = [int(n) for n in spec["shape"]]
            data = random_blocks(spec["type"], int(np.prod(shape)), rng)
            quant = gguf.GGMLQuantizationType[spec["type"]]
            # GGUFWriter takes raw quantized bytes with the byte shape of the rows.
            writer.add_tensor(spec["name"], data, raw_shape=_byte_shape(shape, quant),
                              raw_dtype=quant)
        writer.write_header_to_file()
        writer.write_kv_data_to_file()
        writer.write_tensors_to_file()
        writer.close()


def _byte_shape(shape: list[int], quant: Any) -> list[int]:
    """GGUF lists dimensions innermost first; the writer takes numpy's order, in bytes."""
    import gguf

    block_size, type_size = gguf.GGML_QUANT_SIZES[quant]
    rows = list(reversed(shape))
    rows[-1] = rows[-1] // block_size * type_size
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    skeleton = commands.add_parser("skeleton", help="metadata of a real GGUF, no weights")
    skeleton.add_argument("real", type=Path)
    skeleton.add_argument("skeleton", type=Path)
    model = commands.add_parser("model", help="a stand-in GGUF from a skeleton")
    model.add_argument("skeleton", type=Path)
    model.add_argument("model", type=Path)
    args = parser.parse_args()
    if args.command == "skeleton":
        write_skeleton(args.real, args.skeleton)
    else:
        write_model(args.skeleton, args.model)
    return 0


if __name__ == "__main__":
    sys.exit(main())
