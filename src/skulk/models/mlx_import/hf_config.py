"""config.json and tokenizer_config.json for an imported model, from GGUF metadata."""

from dataclasses import dataclass

from skulk.models.mlx_import.gguf_file import GgufFile
from skulk.models.mlx_import.tokenizer_build import GgufVocabulary

JsonDict = dict[str, object]


@dataclass(frozen=True)
class LlamaHyperparameters:
    """The `llama.*` metadata a Hugging Face Llama config needs."""

    hidden_size: int
    intermediate_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    head_dim: int
    rms_norm_eps: float
    rope_theta: float
    context_length: int
    vocab_size: int
    tie_word_embeddings: bool
    rope_scaling: JsonDict | None


def read_llama_hyperparameters(gguf: GgufFile) -> LlamaHyperparameters:
    """Read `llama.*` keys; raises for RoPE scaling this importer cannot express."""
    heads = gguf.integer("llama.attention.head_count")
    hidden = gguf.integer("llama.embedding_length")
    names = {tensor.name for tensor in gguf.tensors()}
    if "rope_freqs.weight" in names:
        raise ValueError("Llama 3.1-style RoPE frequency factors (rope_freqs) are not "
                         "supported by the importer yet")
    return LlamaHyperparameters(
        hidden_size=hidden,
        intermediate_size=gguf.integer("llama.feed_forward_length"),
        num_hidden_layers=gguf.integer("llama.block_count"),
        num_attention_heads=heads,
        num_key_value_heads=(gguf.integer("llama.attention.head_count_kv")
                             if gguf.has("llama.attention.head_count_kv") else heads),
        head_dim=(gguf.integer("llama.attention.key_length")
                  if gguf.has("llama.attention.key_length") else hidden // heads),
        rms_norm_eps=gguf.number("llama.attention.layer_norm_rms_epsilon"),
        rope_theta=(gguf.number("llama.rope.freq_base")
                    if gguf.has("llama.rope.freq_base") else 10000.0),
        context_length=gguf.integer("llama.context_length"),
        vocab_size=len(gguf.strings("tokenizer.ggml.tokens")),
        tie_word_embeddings="output.weight" not in names,
        rope_scaling=_rope_scaling(gguf),
    )


def _rope_scaling(gguf: GgufFile) -> JsonDict | None:
    if not gguf.has("llama.rope.scaling.type"):
        return None
    kind = gguf.string("llama.rope.scaling.type")
    if kind == "none":
        return None
    if kind != "linear":
        raise ValueError(f"RoPE scaling {kind!r} is not supported by the importer yet")
    return {"type": "linear", "factor": gguf.number("llama.rope.scaling.factor")}


def llama_config(
    hp: LlamaHyperparameters, vocabulary: GgufVocabulary, eos_token_id: int | None,
    quantization: JsonDict | None,
) -> JsonDict:
    """A Hugging Face `LlamaForCausalLM` config.json that mlx-lm's loader accepts.

    `quantization` is mlx-lm's `{"group_size": ..., "bits": ...}` (plus per-module
    overrides), or None for float32 weights.
    """
    config: JsonDict = {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "hidden_size": hp.hidden_size,
        "intermediate_size": hp.intermediate_size,
        "num_hidden_layers": hp.num_hidden_layers,
        "num_attention_heads": hp.num_attention_heads,
        "num_key_value_heads": hp.num_key_value_heads,
        "head_dim": hp.head_dim,
        "hidden_act": "silu",
        "rms_norm_eps": hp.rms_norm_eps,
        "rope_theta": hp.rope_theta,
        "rope_scaling": hp.rope_scaling,
        "max_position_embeddings": hp.context_length,
        "vocab_size": hp.vocab_size,
        "tie_word_embeddings": hp.tie_word_embeddings,
        "attention_bias": False,
        "mlp_bias": False,
        "bos_token_id": vocabulary.bos_token_id,
        "eos_token_id": eos_token_id,
        "torch_dtype": "float32",
    }
    if quantization is not None:
        config["quantization"] = quantization
    return config


def tokenizer_config(
    vocabulary: GgufVocabulary, token_ids: dict[str, int | None], chat_template: str | None,
    context_length: int,
) -> JsonDict:
    """tokenizer_config.json: the special tokens by text and the GGUF's chat template.

    `token_ids` maps `bos_token`, `eos_token`, `unk_token`, `pad_token` to ids (or None).
    """
    config: JsonDict = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "add_bos_token": vocabulary.add_bos_token,
        "add_eos_token": False,
        "add_prefix_space": vocabulary.add_prefix_space,
        "clean_up_tokenization_spaces": False,
        "model_max_length": context_length,
    }
    for role, token_id in token_ids.items():
        if token_id is not None:
            config[role] = vocabulary.tokens[token_id]
    if chat_template is not None:
        config["chat_template"] = chat_template
    return config
