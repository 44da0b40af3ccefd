"""Tiny random-weight Llama models written as GGUF files, the way llama.cpp lays them out.

The reference weights are kept in Hugging Face order; the GGUF gets llama.cpp's
interleaved attn_q/attn_k rows (written here independently of the importer's
un-permute), Q4_1 matrices and a Q8_0 embedding like the bundled SmolLM2.
"""

from dataclasses import dataclass
from pathlib import Path

import mlx.core as mx
import numpy as np
import numpy.typing as npt
import pytest
from gguf import GGMLQuantizationType, GGUFWriter
from gguf.quants import dequantize, quantize
from mlx.utils import tree_flatten
from mlx_lm.models.llama import Model, ModelArgs
from tokenizers import pre_tokenizers

FloatArray = npt.NDArray[np.float32]

HIDDEN, LAYERS, HEADS, KV_HEADS, FFN = 64, 2, 4, 2, 128
SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
MERGES = ["h e", "l l", "he ll", "hell o", "Ġ w"]
CHAT_TEMPLATE = (
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + "
    "message['content'] + '<|im_end|>\n'}}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)


def tiny_tokens() -> list[str]:
    """Three control tokens, the 256 byte-level characters, then the merged tokens."""
    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    merged = [merge.replace(" ", "") for merge in MERGES]
    return SPECIALS + alphabet + merged


def llama_cpp_permute(rows: FloatArray, n_heads: int) -> FloatArray:
    """llama.cpp's row order: per head, the two halves interleaved pair by pair."""
    half = rows.shape[0] // n_heads // 2
    return rows.reshape(n_heads, 2, half, *rows.shape[1:]).swapaxes(1, 2).reshape(rows.shape)


def round_trip(values: FloatArray, kind: GGMLQuantizationType) -> FloatArray:
    return np.asarray(dequantize(quantize(values, kind), kind), dtype=np.float32)


@dataclass(frozen=True)
class TinyModel:
    """A GGUF on disk and the float32 Hugging Face weights it represents exactly."""

    gguf_path: Path
    reference: dict[str, FloatArray]
    args: ModelArgs


def _gguf_tensors(reference: dict[str, FloatArray]) -> dict[str, tuple[FloatArray, str]]:
    """GGUF name → (float values in GGUF row order, the kind to store them as)."""
    tensors = {"token_embd.weight": (reference["model.embed_tokens.weight"], "Q8_0"),
               "output_norm.weight": (reference["model.norm.weight"], "F32")}
    parts = {"attn_q": "self_attn.q_proj", "attn_k": "self_attn.k_proj",
             "attn_v": "self_attn.v_proj", "attn_output": "self_attn.o_proj",
             "ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj", "ffn_down": "mlp.down_proj"}
    for layer in range(LAYERS):
        hf = f"model.layers.{layer}"
        tensors[f"blk.{layer}.attn_norm.weight"] = (reference[f"{hf}.input_layernorm.weight"],
                                                     "F32")
        tensors[f"blk.{layer}.ffn_norm.weight"] = (
            reference[f"{hf}.post_attention_layernorm.weight"], "F32")
        for gguf_part, hf_part in parts.items():
            values = reference[f"{hf}.{hf_part}.weight"]
            if gguf_part == "attn_q":
                values = llama_cpp_permute(values, HEADS)
            elif gguf_part == "attn_k":
                values = llama_cpp_permute(values, KV_HEADS)
            tensors[f"blk.{layer}.{gguf_part}.weight"] = (values, "Q4_1")
    return tensors


def write_tiny_gguf(path: Path, seed: int = 0) -> TinyModel:
    """Write a 2-layer random Llama as GGUF; reference weights equal its dequantized ones.

    Quantization works row by row, so quantizing the permuted rows and un-permuting gives
    the same values as quantizing the rows in place: the reference needs no un-permute.
    """
    tokens = tiny_tokens()
    args = ModelArgs(model_type="llama", hidden_size=HIDDEN, num_hidden_layers=LAYERS,
                     intermediate_size=FFN, num_attention_heads=HEADS,
                     num_key_value_heads=KV_HEADS, rms_norm_eps=1e-5,
                     vocab_size=len(tokens), rope_theta=10000.0, tie_word_embeddings=True)
    mx.random.seed(seed)
    model = Model(args)
    rng = np.random.default_rng(seed)
    originals: dict[str, FloatArray] = {}
    reference: dict[str, FloatArray] = {}
    flat = tree_flatten(model.parameters())
    assert isinstance(flat, list)  # a dict only when asked for one
    for name, value in flat:
        array = np.array(value, dtype=np.float32)
        if array.ndim == 1:  # norms start at 1.0; vary them so a misplaced one shows
            array = (1.0 + 0.1 * rng.standard_normal(array.shape)).astype(np.float32)
        kind = GGMLQuantizationType.Q8_0 if "embed" in name else GGMLQuantizationType.Q4_1
        originals[name] = array
        reference[name] = round_trip(array, kind) if array.ndim == 2 else array
    writer = GGUFWriter(str(path), "llama")
    writer.add_block_count(LAYERS)
    writer.add_context_length(128)
    writer.add_embedding_length(HIDDEN)
    writer.add_feed_forward_length(FFN)
    writer.add_head_count(HEADS)
    writer.add_head_count_kv(KV_HEADS)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_rope_freq_base(10000.0)
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("smollm")
    writer.add_token_list(tokens)
    writer.add_token_types([3] * len(SPECIALS) + [1] * (len(tokens) - len(SPECIALS)))
    writer.add_token_merges(MERGES)
    writer.add_bos_token_id(1)
    writer.add_eos_token_id(2)
    writer.add_add_bos_token(False)
    writer.add_chat_template(CHAT_TEMPLATE)
    for name, (values, kind_name) in _gguf_tensors(originals).items():
        qtype = GGMLQuantizationType[kind_name]
        writer.add_tensor(name, quantize(values, qtype), raw_dtype=qtype)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return TinyModel(path, reference, args)


@pytest.fixture(scope="session")
def tiny_gguf(tmp_path_factory: pytest.TempPathFactory) -> TinyModel:
    """One tiny GGUF shared by the importer's unit tests."""
    return write_tiny_gguf(tmp_path_factory.mktemp("tiny") / "tiny-llama.Q4_1.gguf")
