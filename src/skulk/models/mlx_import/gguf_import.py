"""GGUF file → MLX model directory (config, weights, tokenizer), written into `out_dir`."""

import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

from skulk.models.mlx_import.block_repack import GROUP_SIZE, repack, repackable_bits
from skulk.models.mlx_import.gguf_file import GgufFile, GgufTensor, dequantize
from skulk.models.mlx_import.hf_config import (
    JsonDict,
    LlamaHyperparameters,
    llama_config,
    read_llama_hyperparameters,
    tokenizer_config,
)
from skulk.models.mlx_import.llama_names import map_llama_name, unpermute_rows
from skulk.models.mlx_import.mlx_arrays import quantize
from skulk.models.mlx_import.tokenizer_build import GgufVocabulary, write_tokenizer
from skulk.models.mlx_import.weights_writer import WeightsWriter, WrittenWeights


@dataclass(frozen=True)
class Encoding:
    """How one tensor is stored: float32, repacked blocks, or quantized from float32."""

    method: Literal["float32", "repack", "quantize"]
    bits: int | None = None


def choose_encoding(kind: str, shape: tuple[int, ...], q_bits: int | None) -> Encoding:
    """Pick a tensor's storage; never lossier than the GGUF where an exact form exists.

    GGUF blocks that fit MLX's affine form are repacked exactly, at `q_bits` or at their
    own wider width (a Q8_0 embedding stays 8-bit in a 4-bit model). Other matrices are
    quantized from float32, which rounds; vectors stay float32.
    """
    if q_bits is None or len(shape) != 2 or shape[1] % GROUP_SIZE:
        return Encoding("float32")
    source_bits = repackable_bits(kind)
    if source_bits is not None:
        return Encoding("repack", max(source_bits, q_bits))
    return Encoding("quantize", q_bits)


def read_vocabulary(gguf: GgufFile) -> GgufVocabulary:
    """The `tokenizer.ggml.*` metadata; only byte-level BPE (`gpt2`) vocabularies."""
    model = gguf.string("tokenizer.ggml.model")
    if model != "gpt2":
        raise ValueError(f"tokenizer model {model!r} is not supported yet (only gpt2 BPE)")
    return GgufVocabulary(
        tokens=gguf.strings("tokenizer.ggml.tokens"),
        token_types=gguf.integers("tokenizer.ggml.token_type"),
        merges=gguf.strings("tokenizer.ggml.merges"),
        pre_tokenizer=(gguf.string("tokenizer.ggml.pre")
                       if gguf.has("tokenizer.ggml.pre") else "default"),
        add_prefix_space=gguf.boolean("tokenizer.ggml.add_space_prefix", False),
        bos_token_id=_optional_id(gguf, "bos"),
        add_bos_token=gguf.boolean("tokenizer.ggml.add_bos_token", False),
    )


def _optional_id(gguf: GgufFile, role: str) -> int | None:
    key = f"tokenizer.ggml.{role}_token_id"
    return gguf.integer(key) if gguf.has(key) else None


def _write_tensor(
    writer: WeightsWriter, tensor: GgufTensor, hp: LlamaHyperparameters, q_bits: int | None,
) -> None:
    mapped = map_llama_name(tensor.name)
    heads = {"query": hp.num_attention_heads, "key": hp.num_key_value_heads}.get(
        mapped.unpermute or "")
    encoding = choose_encoding(tensor.kind, tensor.shape, q_bits)
    if encoding.method == "float32" or encoding.bits is None:
        values = dequantize(tensor)
        writer.add(mapped.hf_name, unpermute_rows(values, heads) if heads else values)
        return
    if encoding.method == "repack":
        packed = repack(tensor.kind, tensor.blocks(), encoding.bits)
    else:
        packed = quantize(dequantize(tensor), encoding.bits)
    if heads:
        # Rows carry their own scales and biases, so moving whole rows is exact.
        packed = replace(
            packed, weight=unpermute_rows(packed.weight, heads),
            scales=unpermute_rows(packed.scales, heads),
            biases=unpermute_rows(packed.biases, heads))
    writer.add_quantized(mapped.hf_name.removesuffix(".weight"), packed)


def _write_json(path: Path, document: JsonDict) -> None:
    path.write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n")


def import_gguf(source: Path, out_dir: Path, q_bits: int | None) -> WrittenWeights:
    """Convert a Llama-architecture GGUF into an MLX model directory at `out_dir`.

    `q_bits` None keeps float32 weights; 4 or 8 stores matrices quantized (see
    `choose_encoding`). `out_dir` must exist; the caller makes it appear atomically.
    """
    gguf = GgufFile(source)
    architecture = gguf.string("general.architecture")
    if architecture != "llama":
        raise ValueError(
            f"GGUF architecture {architecture!r} is not supported yet: the GGUF importer maps "
            f"llama only (Llama, Mistral and SmolLM files); for {architecture} import or "
            "pull the model's Hugging Face or mlx-community repository instead")
    hp = read_llama_hyperparameters(gguf)
    vocabulary = read_vocabulary(gguf)
    writer = WeightsWriter(out_dir)
    for tensor in gguf.tensors():
        _write_tensor(writer, tensor, hp, q_bits)
    written = writer.close()
    eos = _optional_id(gguf, "eos")
    _write_json(out_dir / "config.json",
                llama_config(hp, vocabulary, eos, writer.quantization(q_bits)))
    write_tokenizer(vocabulary, out_dir)
    template = (gguf.string("tokenizer.chat_template")
                if gguf.has("tokenizer.chat_template") else None)
    token_ids = {"bos_token": vocabulary.bos_token_id, "eos_token": eos,
                 "unk_token": _optional_id(gguf, "unknown"),
                 "pad_token": _optional_id(gguf, "padding")}
    _write_json(out_dir / "tokenizer_config.json",
                tokenizer_config(vocabulary, token_ids, template, hp.context_length))
    return written
