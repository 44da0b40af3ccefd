"""Model cards: what the cluster knows about a model before any node loads it."""

from typing import Literal

from pydantic import Field

from skulk.shared.types.base import WireModel
from skulk.shared.types.ids import ModelId

ModelFormat = Literal["gguf", "mlx"]
Capability = Literal["text", "chat", "vision", "thinking", "embedding"]
# The engines placement may choose, as instances and cards name them on the wire. Test
# engines (skulk.testing's echo) are never on the wire: runners are handed their
# description, not this name.
EngineName = Literal["llama_cpp", "mlx"]
CardDrafter = Literal["ngram", "draft_model", "remote", "none"]


class ModelSource(WireModel):
    """Where the weights of one format (and, for GGUF, one quantization) come from."""

    format: ModelFormat = Field(description="Weight format of this source.")
    package: str | None = Field(
        default=None, description="Python package that ships the file, if any."
    )
    filename: str = Field(
        description="File (or directory) name inside the source; for a hub source, the "
        "GGUF file name or a pattern such as `*Q4_K_M.gguf` (case-insensitive), or the "
        "repository's name for safetensors weights.")
    size_bytes: int = Field(description="Size of the weights in bytes.")
    repo: str | None = Field(
        default=None, description="Hugging Face repository that holds these weights "
        "(`owner/name`); None: not on the hub (bundled, or imported on first use).")
    quant: str | None = Field(
        default=None, description="Quantization label, e.g. `Q4_K_M` for GGUF or `4bit` "
        "for MLX; None: as published.")


class ModelCard(WireModel):
    """Static facts about a model, read by placement and by the engines."""

    model_id: ModelId = Field(description="Canonical short id, e.g. `smollm2-135m`.")
    aliases: list[str] = Field(
        default_factory=list, description="Other ids that name this model."
    )
    family: str = Field(description="Architecture family, e.g. `llama`.")
    n_layers: int = Field(description="Number of transformer layers.")
    hidden_size: int = Field(description="Width of the residual stream.")
    num_attention_heads: int = Field(description="Query heads per layer.")
    num_key_value_heads: int = Field(description="Key/value heads per layer.")
    context_length: int = Field(description="Trained context length in tokens.")
    capabilities: list[Capability] = Field(description="What the model can do.")
    sources: list[ModelSource] = Field(description="Weights available, per format.")
    chat_template_source: Literal["gguf", "tokenizer_config"] = Field(
        description="Where the chat template is read from."
    )
    drafters: list[CardDrafter] = Field(
        default_factory=lambda: list[CardDrafter](["ngram"]),
        description="Speculative drafters that suit this model on the MLX engine; the first "
        "is what requests get when they do not choose (`none`: no drafting by default).")
    draft_model_q_bits: int | None = Field(
        default=None, description="The `draft_model` drafter is this model's own MLX copy "
        "quantized to these bits (imported beside the full one); None: it has none.")
    model_type: str | None = Field(
        default=None, description="The architecture's name in config.json and mlx-lm, "
        "e.g. `qwen2`; None: the same as `family`.")
    parameters: int | None = Field(
        default=None, description="Parameter count, as published; None: not known.")
    head_dim: int | None = Field(
        default=None, description="Width of one attention head, where config.json sets it "
        "apart from hidden_size / num_attention_heads (Qwen3, Gemma); None: the quotient.")
    unverified: list[str] = Field(
        default_factory=list, description="Fields whose figures were written without "
        "checking them against the hub (e.g. `sources.size_bytes`); the hub's metadata "
        "corrects them the first time the model is pulled.")

    def source_for(self, format: ModelFormat) -> ModelSource | None:
        """The first (preferred) source of `format`: for GGUF, the default quantization."""
        return next((s for s in self.sources if s.format == format), None)

    @property
    def attention_head_dim(self) -> int:
        """Width of one attention head, as the KV cache stores it."""
        return self.head_dim or self.hidden_size // self.num_attention_heads

    @property
    def storage_size(self) -> int:
        return min(s.size_bytes for s in self.sources)
