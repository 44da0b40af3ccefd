import pytest

from skulk.models.store.catalogue_pull import pull_request_for
from skulk.models.store.hub_files import NoSuchWeights
from skulk.models.store.pull import PullRequest
from skulk.shared.types.ids import ModelId
from skulk.shared.types.model_cards import ModelCard, ModelSource

GGUF = ModelSource(format="gguf", repo="org/M-GGUF", filename="M-Q4_K_M*.gguf",
                   quant="Q4_K_M", size_bytes=4)
MLX = ModelSource(format="mlx", repo="mlx-community/M-4bit", filename="M-4bit", quant="4bit",
                  size_bytes=3)
BUNDLED = ModelSource(format="gguf", package="llm_m", filename="m.gguf", size_bytes=4)


def _card(*sources: ModelSource) -> ModelCard:
    return ModelCard(model_id=ModelId("m-instruct"), aliases=["org/M-Instruct"],
                     family="llama", n_layers=2, hidden_size=8, num_attention_heads=2,
                     num_key_value_heads=1, context_length=64, capabilities=["text"],
                     chat_template_source="gguf", sources=list(sources))


def test_a_catalogue_id_pulls_the_cards_default_gguf_under_the_cards_id() -> None:
    assert pull_request_for("m-instruct", _card(GGUF, MLX)) == PullRequest(
        repo="org/M-GGUF", model_id="m-instruct", format="gguf", quant="Q4_K_M",
        pattern="M-Q4_K_M*.gguf")


def test_format_quant_and_model_id_are_honoured() -> None:
    card = _card(GGUF, MLX)
    assert pull_request_for("m-instruct", card, format="mlx") == PullRequest(
        repo="mlx-community/M-4bit", model_id="m-instruct", format="mlx")
    assert pull_request_for("m-instruct", card, quant="q6_k", model_id="mine") == PullRequest(
        repo="org/M-GGUF", model_id="mine", format="gguf", quant="Q6_K")
    assert pull_request_for("m-instruct", _card(MLX)).format == "mlx"


def test_a_repository_name_is_pulled_as_before() -> None:
    assert pull_request_for("org/Other-GGUF", None, quant="Q8_0") == PullRequest(
        repo="org/Other-GGUF", quant="Q8_0")
    # An alias that is also a repository, of a card with nothing on the hub: the repository.
    assert pull_request_for("org/M-Instruct", _card(BUNDLED)).repo == "org/M-Instruct"


def test_a_name_that_is_neither_is_refused_saying_what_would_do() -> None:
    with pytest.raises(NoSuchWeights, match="neither a catalogue id"):
        pull_request_for("nonsense", None)
    with pytest.raises(NoSuchWeights, match="names no hub repository for its mlx weights"):
        pull_request_for("m-instruct", _card(GGUF), format="mlx")


def test_an_mlx_quant_the_card_does_not_list_is_refused_not_swapped() -> None:
    card = _card(GGUF, MLX)
    assert pull_request_for("m-instruct", card, format="mlx", quant="4BIT").repo == MLX.repo
    with pytest.raises(NoSuchWeights, match="lists MLX weights in 4bit, not 8bit"):
        pull_request_for("m-instruct", card, format="mlx", quant="8bit")
