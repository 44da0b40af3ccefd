from pathlib import Path

from skulk.models.catalog import ModelCatalog, builtin_cards_dir, load_cards
from skulk.worker.engines.llama_cpp.description import LLAMA_CPP
from skulk.worker.engines.mlx.description import MLX
from skulk.worker.weight_sources import HubSource, hub_sources
from skulk.worker.weights_fetch import needed_format


def _catalog(tmp_path: Path) -> ModelCatalog:
    return ModelCatalog(load_cards(builtin_cards_dir()), tmp_path)


def test_a_catalogue_card_is_fetched_from_its_hub_repository(tmp_path: Path) -> None:
    card = _catalog(tmp_path).resolve("qwen2.5-0.5b-instruct")
    assert card is not None
    [gguf] = hub_sources(card, "gguf")
    assert isinstance(gguf, HubSource) and gguf.label == "hub Qwen/Qwen2.5-0.5B-Instruct-GGUF"
    assert (gguf.request.model_id, gguf.request.format, gguf.request.quant) == (
        card.model_id, "gguf", "Q4_K_M")
    [mlx] = hub_sources(card, "mlx")
    assert isinstance(mlx, HubSource) and mlx.request.repo.startswith("mlx-community/")


def test_the_bundled_model_has_no_hub_source(tmp_path: Path) -> None:
    card = _catalog(tmp_path).resolve("smollm2-135m")
    assert card is not None and hub_sources(card, "gguf") == []


def test_mlx_fetches_a_hub_mlx_copy_rather_than_importing_a_gguf(tmp_path: Path) -> None:
    catalog = _catalog(tmp_path)
    qwen = catalog.resolve("qwen2.5-0.5b-instruct")
    smollm2 = catalog.resolve("smollm2-135m")
    assert qwen is not None and smollm2 is not None
    assert needed_format(catalog, qwen, MLX) == "mlx"
    assert needed_format(catalog, qwen, LLAMA_CPP) == "gguf"
    # The bundled model's MLX copy is still imported from its GGUF, which is here.
    assert needed_format(catalog, smollm2, MLX) is None
