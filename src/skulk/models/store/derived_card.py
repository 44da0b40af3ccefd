"""A model card derived from the weights themselves: GGUF metadata or config.json.

Used for a model no built-in card describes (pulled from any repository, added from
disk). The figures placement needs come from the file; the weights' size from the store.
"""

import json
from pathlib import Path

from skulk.shared.types.ids import ModelId
from skulk.shared.types.model_cards import Capability, ModelCard, ModelSource

_EMBEDDING_TYPES = ("bert", "nomic-bert", "jina-bert-v2", "t5encoder")


def card_from_gguf(model_id: ModelId, gguf_path: Path, source: ModelSource) -> ModelCard:
    """The card of a GGUF file; raises ValueError naming a key the file lacks."""
    from skulk.models.mlx_import.gguf_file import GgufFile  # numpy and gguf: load on use

    gguf = GgufFile(gguf_path)
    arch = gguf.string("general.architecture")
    heads = gguf.integer(f"{arch}.attention.head_count")
    capabilities: list[Capability] = (["embedding"] if arch in _EMBEDDING_TYPES else
                                      ["text", "chat"] if gguf.has("tokenizer.chat_template")
                                      else ["text"])
    return ModelCard(
        model_id=model_id, family=arch,
        n_layers=gguf.integer(f"{arch}.block_count"),
        hidden_size=gguf.integer(f"{arch}.embedding_length"),
        num_attention_heads=heads,
        num_key_value_heads=(gguf.integer(f"{arch}.attention.head_count_kv")
                             if gguf.has(f"{arch}.attention.head_count_kv") else heads),
        context_length=gguf.integer(f"{arch}.context_length"),
        head_dim=(gguf.integer(f"{arch}.attention.key_length")
                  if gguf.has(f"{arch}.attention.key_length") else None),
        capabilities=capabilities, sources=[source], chat_template_source="gguf")


def card_from_config(model_id: ModelId, directory: Path, source: ModelSource) -> ModelCard:
    """The card of a Hugging Face model directory, from its config.json."""
    config = json.loads((directory / "config.json").read_text())
    # Multimodal configs keep the language model's figures in a nested text_config.
    text = config.get("text_config", config)
    try:
        heads = int(text["num_attention_heads"])
        card = ModelCard(
            model_id=model_id, family=str(config["model_type"]),
            n_layers=int(text["num_hidden_layers"]), hidden_size=int(text["hidden_size"]),
            num_attention_heads=heads,
            num_key_value_heads=int(text.get("num_key_value_heads", heads)),
            context_length=int(text.get("max_position_embeddings", 2048)),
            head_dim=int(text["head_dim"]) if text.get("head_dim") else None,
            model_type=str(config["model_type"]),
            capabilities=["text", "chat"] if _has_chat_template(directory) else ["text"],
            sources=[source], chat_template_source="tokenizer_config")
    except KeyError as missing:
        raise ValueError(f"{directory / 'config.json'} lacks {missing}") from missing
    return card


def _has_chat_template(directory: Path) -> bool:
    if (directory / "chat_template.jinja").is_file():
        return True
    tokenizer_config = directory / "tokenizer_config.json"
    return (tokenizer_config.is_file()
            and "chat_template" in json.loads(tokenizer_config.read_text()))
