"""Every shipped card is internally consistent, and placement works from it before any
byte of its weights is here."""

import re
from pathlib import Path

import pytest

from skulk.master.placement import ClusterView, previews
from skulk.models.catalog import ModelCatalog, builtin_cards_dir, load_cards
from skulk.models.store.card_hub import hub_source
from skulk.shared.types.ids import NodeId
from skulk.shared.types.model_cards import ModelCard
from skulk.testing.placement import CPU_BACKENDS, nodes
from skulk.worker.telemetry import read_telemetry

CARDS = load_cards(builtin_cards_dir())
_REPO = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9][A-Za-z0-9_.-]*$")
_CARD_FIELDS = set(ModelCard.model_fields)


def test_the_catalogue_ships_the_models_people_run() -> None:
    ids = {card.model_id for card in CARDS}
    wanted = {"smollm2-135m", "llama-3.2-1b-instruct", "llama-3.2-3b-instruct",
              "llama-3.1-8b-instruct", "llama-3.3-70b-instruct", "mistral-7b-instruct-v0.3",
              "phi-3.5-mini-instruct", "phi-4-mini-instruct", "deepseek-r1-distill-qwen-7b",
              *(f"qwen2.5-{s}-instruct" for s in ("0.5b", "1.5b", "3b", "7b", "14b", "32b",
                                                  "72b")),
              *(f"qwen3-{s}" for s in ("0.6b", "1.7b", "4b", "8b", "14b", "32b")),
              *(f"gemma-2-{s}-it" for s in ("2b", "9b", "27b")),
              *(f"gemma-3-{s}-it" for s in ("1b", "4b", "12b", "27b"))}
    assert wanted <= ids


def test_no_two_cards_share_a_name() -> None:
    names = [name.lower() for card in CARDS for name in (card.model_id, *card.aliases)]
    assert len(names) == len(set(names))


@pytest.mark.parametrize("card", CARDS, ids=lambda card: str(card.model_id))
def test_a_shipped_card_is_consistent(card: ModelCard) -> None:
    assert card.num_attention_heads % card.num_key_value_heads == 0
    assert card.hidden_size % card.num_attention_heads == 0
    assert card.n_layers > 0 and card.context_length >= 2048
    assert card.sources, "a card names at least one source"
    for source in card.sources:
        assert source.size_bytes > 0
        assert source.repo is None or _REPO.match(source.repo), source.repo
        if source.format == "gguf" and source.repo is not None:
            assert source.quant is not None and source.filename.lower().endswith(".gguf")
            assert source.quant.upper() in source.filename.upper()
    for format in {source.format for source in card.sources}:
        assert card.source_for(format) is not None
    # A card from the hub has a hub source for every format it lists.
    if any(source.repo for source in card.sources):
        for format in {source.format for source in card.sources}:
            assert hub_source(card, format) is not None
        assert card.parameters is not None and card.model_type is not None
    for field in card.unverified:
        assert field.split(".")[0] in _CARD_FIELDS, f"unverified names no field: {field}"
    if card.parameters is not None and card.source_for("gguf") is not None:
        # A 4-to-5-bit GGUF holds about 0.5-0.75 bytes per parameter.
        default_gguf = card.source_for("gguf")
        assert default_gguf is not None
        assert 0.4 < default_gguf.size_bytes / card.parameters < 1.2


def test_the_bundled_model_is_unchanged(tmp_path: Path) -> None:
    card = ModelCatalog.builtin(tmp_path).resolve("smollm2-135m")
    assert card is not None and card.unverified == [] and card.model_type is None
    assert [s.format for s in card.sources] == ["gguf", "mlx"]
    assert all(s.repo is None for s in card.sources)
    assert hub_source(card, "gguf") is None


def _this_machine() -> ClusterView:
    here = read_telemetry(NodeId("here"), has_worker=True, backends=CPU_BACKENDS)
    return ClusterView(nodes=nodes(here))


def test_a_70b_preview_on_this_machine_says_it_does_not_fit() -> None:
    [card] = [c for c in CARDS if c.model_id == "llama-3.3-70b-instruct"]
    found = previews(card, _this_machine())
    assert found and all(p.reason is not None and "does not fit" in p.reason
                         for p in found if p.sharding == "pipeline")
    assert all(p.plan is not None for p in found if p.sharding == "pipeline")


@pytest.mark.parametrize("card", CARDS, ids=lambda card: str(card.model_id))
def test_every_card_previews_without_a_byte_downloaded(card: ModelCard) -> None:
    found = previews(card, _this_machine())
    assert {p.engine for p in found} == {"llama_cpp", "mlx"} & {
        "llama_cpp" if s.format == "gguf" else "mlx" for s in card.sources}
    for preview in found:
        assert (preview.reason is None) == (preview.plan is not None and preview.plan.fits)
