from skulk.models.store.card_hub import hub_file_pattern, hub_source
from skulk.shared.types.ids import ModelId
from skulk.shared.types.model_cards import ModelCard, ModelSource


def _card(*sources: ModelSource) -> ModelCard:
    return ModelCard(model_id=ModelId("m"), family="llama", n_layers=2, hidden_size=8,
                     num_attention_heads=2, num_key_value_heads=1, context_length=64,
                     capabilities=["text"], chat_template_source="gguf", sources=list(sources))


Q4 = ModelSource(format="gguf", repo="org/M-GGUF", filename="M-Q4_K_M*.gguf", quant="Q4_K_M",
                 size_bytes=4)
Q8 = ModelSource(format="gguf", repo="org/M-GGUF", filename="M-Q8_0*.gguf", quant="Q8_0",
                 size_bytes=8)
MLX = ModelSource(format="mlx", repo="mlx-community/M-4bit", filename="M-4bit", quant="4bit",
                  size_bytes=3)


def test_the_default_quant_is_the_formats_first_hub_source() -> None:
    card = _card(Q4, Q8, MLX)
    assert hub_source(card, "gguf") == ("org/M-GGUF", "Q4_K_M")
    assert hub_source(card, "gguf", "q8_0") == ("org/M-GGUF", "Q8_0")
    assert hub_file_pattern(card, "gguf", "Q8_0") == "M-Q8_0*.gguf"
    assert hub_source(card, "mlx") == ("mlx-community/M-4bit", "4bit")


def test_an_unlisted_quant_is_asked_of_the_default_repository_without_a_file_name() -> None:
    card = _card(Q4, MLX)
    assert hub_source(card, "gguf", "Q5_K_M") == ("org/M-GGUF", "Q5_K_M")
    assert hub_file_pattern(card, "gguf", "Q5_K_M") is None


def test_a_source_off_the_hub_gives_none() -> None:
    bundled = ModelSource(format="gguf", package="llm_m", filename="m.gguf", size_bytes=4)
    card = _card(bundled)
    assert hub_source(card, "gguf") is None and hub_source(card, "mlx") is None
