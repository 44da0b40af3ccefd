from pathlib import Path

from skulk.models.catalog import ModelCatalog, load_cards
from skulk.models.store.manifest import StoredFile, StoreEntry, stored_entries, write_entry
from skulk.shared.types.ids import ModelId
from skulk.shared.types.model_cards import ModelCard, ModelSource


def test_builtin_smollm2_resolves_by_id_and_upstream_alias(tmp_path: Path) -> None:
    catalog = ModelCatalog.builtin(tmp_path)
    card = catalog.resolve("smollm2-135m")
    assert card is not None
    assert catalog.resolve("HuggingFaceTB/SmolLM2-135M-Instruct") == card
    assert card.n_layers == 30 and card.num_key_value_heads == 3


def test_bundled_gguf_is_found_in_its_package(tmp_path: Path) -> None:
    catalog = ModelCatalog.builtin(tmp_path)
    card = catalog.resolve("smollm2-135m")
    assert card is not None
    path = catalog.local_path(card, "gguf")
    assert path is not None and path.name == "SmolLM2-135M-Instruct.Q4_1.gguf"
    assert path.stat().st_size == card.storage_size


def test_models_dir_is_searched_and_missing_format_is_none(tmp_path: Path) -> None:
    card = ModelCard(
        model_id=ModelId("tiny"), family="llama", n_layers=2, hidden_size=8,
        num_attention_heads=2, num_key_value_heads=1, context_length=64,
        capabilities=["text"], chat_template_source="gguf",
        sources=[ModelSource(format="gguf", filename="tiny.gguf", size_bytes=4)],
    )
    catalog = ModelCatalog([card], tmp_path)
    assert catalog.local_path(card, "gguf") is None
    (tmp_path / "tiny.gguf").write_bytes(b"GGUF")
    assert catalog.local_path(card, "gguf") == tmp_path / "tiny.gguf"
    assert catalog.local_path(card, "mlx") is None
    assert catalog.resolve("nope") is None


def test_malformed_card_names_its_file(tmp_path: Path) -> None:
    (tmp_path / "bad.toml").write_text('model_id = "x"\nsurprise = 1\n')
    try:
        load_cards(tmp_path)
    except ValueError as error:
        assert "bad.toml" in str(error)
    else:
        raise AssertionError("a malformed card must be refused")


def test_builtin_stored_and_announced_cards_are_combined_nearest_first(
        tmp_path: Path) -> None:
    from skulk.models.store.manifest import StoredFile, StoreEntry, write_entry
    from skulk.testing import factories as f

    stored_card = f.added_card("stored-one")
    (tmp_path / "stored-one-gguf").mkdir()
    write_entry(tmp_path / "stored-one-gguf", StoreEntry(
        directory="stored-one-gguf", model_id=stored_card.model_id, format="gguf",
        files=[StoredFile(name="tiny.gguf", size_bytes=1000, sha256="0" * 64)],
        card=stored_card))
    announced: dict[ModelId, ModelCard] = {}
    catalog = ModelCatalog.builtin(tmp_path)
    catalog.follow_cluster(lambda: announced)
    assert catalog.resolve("stored-one") == stored_card
    assert catalog.resolve("tiny-added") is None

    # An announced card shows up on the next lookup, with no refresh of the store.
    announced = {ModelId("tiny-added"): f.added_card(),
                 ModelId("stored-one"): f.added_card("stored-one", n_layers=9),
                 ModelId("smollm2-135m"): f.added_card("smollm2-135m")}
    ids: list[str] = [c.model_id for c in catalog.cards()]
    assert ids.count("tiny-added") == ids.count("stored-one") == ids.count("smollm2-135m") == 1
    assert catalog.resolve("tiny-added") == f.added_card()
    assert catalog.resolve("stored-one") == stored_card  # this node's own files win
    smol = catalog.resolve("smollm2-135m")
    assert smol is not None and smol.n_layers == 30  # a built-in card is never shadowed
    assert catalog.builtin_card("tiny-added") is None
    assert catalog.seeing({}).resolve("tiny-added") is None
    announced = {}
    assert catalog.resolve("tiny-added") is None


def test_a_stage_copy_serves_only_stages_inside_its_layers_and_never_a_whole_load(
        tmp_path: Path) -> None:
    source = ModelSource(format="mlx", filename="tiny-mlx", size_bytes=4, repo="o/tiny")
    card = ModelCard(
        model_id=ModelId("tiny"), family="llama", n_layers=8, hidden_size=8,
        num_attention_heads=2, num_key_value_heads=1, context_length=64,
        capabilities=["text"], chat_template_source="tokenizer_config", sources=[source])
    def store(directory: str, layers: tuple[int, int] | None) -> Path:
        (tmp_path / directory).mkdir()
        write_entry(tmp_path / directory, StoreEntry(
            directory=directory, model_id=ModelId("tiny"), format="mlx", layers=layers,
            files=[StoredFile(name="config.json", size_bytes=2, sha256="c" * 64)],
            card=card, repo="o/tiny"))
        return tmp_path / directory

    stage = store("tiny-mlx-layers-0-4", (0, 4))
    catalog = ModelCatalog([card], tmp_path, stored_entries(tmp_path))
    assert catalog.local_path(card, "mlx") is None
    assert catalog.stage_path(card, "mlx", None) is None
    assert catalog.stage_path(card, "mlx", (0, 2)) == stage
    assert catalog.stage_path(card, "mlx", (0, 4)) == stage
    assert catalog.stage_path(card, "mlx", (2, 6)) is None

    whole = store("tiny-mlx", None)
    catalog.refresh()
    assert catalog.local_path(card, "mlx") == whole
    assert catalog.stage_path(card, "mlx", (2, 6)) == whole
    assert catalog.stage_path(card, "mlx", (0, 2)) == whole  # a whole copy first


def test_seeing_is_rebuilt_only_when_the_announced_cards_or_the_store_change(
        tmp_path: Path) -> None:
    from skulk.testing import factories as f

    catalog = ModelCatalog.builtin(tmp_path)
    announced = {ModelId("tiny-added"): f.added_card()}
    seen = catalog.seeing(announced)
    assert catalog.seeing(announced) is seen
    assert catalog.seeing(dict(announced)) is seen  # equal cards: the same catalogue
    other = catalog.seeing({})
    assert other is not seen and other.resolve("tiny-added") is None
    again = catalog.seeing(announced)
    assert again is not seen and again.resolve("tiny-added") == f.added_card()

    # A model stored here since: the catalogue is built again and serves its card.
    generation = catalog.generation
    stored_card = f.added_card("stored-two")
    (tmp_path / "stored-two-gguf").mkdir()
    write_entry(tmp_path / "stored-two-gguf", StoreEntry(
        directory="stored-two-gguf", model_id=stored_card.model_id, format="gguf",
        files=[StoredFile(name="tiny.gguf", size_bytes=1000, sha256="0" * 64)],
        card=stored_card))
    assert catalog.seeing(announced) is again
    catalog.refresh()
    assert catalog.generation != generation
    refreshed = catalog.seeing(announced)
    assert refreshed is not again and refreshed.resolve("stored-two") == stored_card
