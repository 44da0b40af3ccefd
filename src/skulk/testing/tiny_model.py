"""A tiny random-weight Llama model directory, for fast tests of the MLX engine.

It has everything a real converted model has (config.json, safetensors, a byte-level BPE
tokenizer.json, tokenizer_config.json with a ChatML chat template), only small: a few
layers of width 64 and a vocabulary of a few hundred tokens.
"""

import importlib
import json
from pathlib import Path
from typing import Any

import mlx.core as mx
from mlx.utils import tree_flatten

from skulk.worker.engines.mlx import mlx_api

_CORPUS = [
    "The quick brown fox jumps over the lazy dog.",
    "Skulk joins machines into one inference cluster behind one endpoint.",
    "Hello! How are you today? I am fine, thank you.",
    "Numbers like 12345 and 67890 appear in text; so do symbols: #, %, &.",
    "Café, naïve, über, smörgåsbord, 東京, こんにちは, 🙂🚀✨ are multi-byte.",
    "user assistant system tool: the roles of a conversation.",
]
_SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
CHAT_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{{ message['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")


def _save_tokenizer(out: Path, vocab_size: int) -> int:
    tokenizers: Any = importlib.import_module("tokenizers")
    transformers: Any = importlib.import_module("transformers")
    tokenizer = tokenizers.Tokenizer(tokenizers.models.BPE())
    tokenizer.pre_tokenizer = tokenizers.pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = tokenizers.decoders.ByteLevel()
    trainer = tokenizers.trainers.BpeTrainer(
        vocab_size=vocab_size, special_tokens=_SPECIAL, show_progress=False,
        initial_alphabet=tokenizers.pre_tokenizers.ByteLevel.alphabet())
    tokenizer.train_from_iterator(_CORPUS * 4, trainer=trainer)
    fast = transformers.PreTrainedTokenizerFast(
        tokenizer_object=tokenizer, eos_token="<|im_end|>", bos_token="<|im_start|>",
        unk_token="<|endoftext|>", pad_token="<|endoftext|>")
    fast.chat_template = CHAT_TEMPLATE
    fast.save_pretrained(str(out))
    return int(tokenizer.get_vocab_size())


def write_tiny_model(out: Path, *, layers: int = 2, hidden: int = 64, heads: int = 4,
                     kv_heads: int = 2, seed: int = 0) -> Path:
    """Write the model directory into `out` (created) and return it."""
    out.mkdir(parents=True, exist_ok=True)
    vocab = _save_tokenizer(out, vocab_size=400)
    config: dict[str, Any] = {
        "model_type": "llama", "hidden_size": hidden, "num_hidden_layers": layers,
        "intermediate_size": hidden * 2, "num_attention_heads": heads,
        "num_key_value_heads": kv_heads, "rms_norm_eps": 1e-5, "vocab_size": vocab,
        "tie_word_embeddings": False, "rope_theta": 10000.0, "torch_dtype": "float32",
        "max_position_embeddings": 4096, "eos_token_id": _SPECIAL.index("<|im_end|>"),
    }
    mx.random.seed(seed)
    model = mlx_api.new_model(config)
    weights = dict(tree_flatten(model.parameters()))
    # At their default scale the random layers barely move the residual stream and greedy
    # output repeats one token; larger projections give varied text, so equality tests
    # between batch sizes compare something.
    weights = {name: value * 4 if "proj" in name else value for name, value in weights.items()}
    mx.save_safetensors(str(out / "model.safetensors"), weights)
    (out / "config.json").write_text(json.dumps(config, indent=2))
    return out
