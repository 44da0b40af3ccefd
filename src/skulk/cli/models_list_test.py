from pathlib import Path

from skulk.cli.models_list import catalogue_lines, cluster_lines
from skulk.models.catalog import ModelCatalog, builtin_cards_dir, load_cards
from skulk.models.peers.holders_test import TINY, reading
from skulk.models.store.manifest import StoredFile, StoreEntry, stored_entries, write_entry
from skulk.shared.types.ids import ModelId, NodeId
from skulk.shared.types.model_cards import ModelCard, ModelSource
from skulk.shared.types.telemetry import StorePull


def _card(model_id: str, size: int, unverified: list[str]) -> ModelCard:
    return ModelCard(model_id=ModelId(model_id), family="llama", n_layers=2, hidden_size=8,
                     num_attention_heads=2, num_key_value_heads=1, context_length=64,
                     capabilities=["text"], chat_template_source="gguf",
                     parameters=7_600_000_000, unverified=unverified,
                     sources=[ModelSource(format="gguf", filename=f"{model_id}.gguf",
                                          size_bytes=size)])


def test_each_model_has_a_line_and_a_held_one_its_path(tmp_path: Path) -> None:
    catalog = ModelCatalog([_card("m-14b", 9_000_000_000, ["sources.size_bytes"]),
                            _card("m-7b", 4_680_000_000, ["sources.size_bytes"])], tmp_path)
    (tmp_path / "m-7b.gguf").write_bytes(b"GGUF")
    # 7b before 14b: numbers in ids compare as numbers.
    header, seven, path, fourteen, footnote = catalogue_lines(catalog)
    assert header.split() == ["MODEL", "PARAMS", "FORMATS", "(size)", "HERE"]
    assert fourteen.split() == ["m-14b", "7.6B", "gguf", "~8.38", "GiB", "-"]
    # Held here: its size is no guess (a pulled card is corrected), and its path follows.
    assert seven.split() == ["m-7b", "7.6B", "gguf", "4.36", "GiB", "gguf"]
    assert path.split() == ["gguf", str(tmp_path / "m-7b.gguf")]
    assert footnote.startswith("~ size as the card guesses it")


def test_the_shipped_catalogue_lists_in_natural_order(tmp_path: Path) -> None:
    catalog = ModelCatalog(load_cards(builtin_cards_dir()), tmp_path)
    ids = [line.split()[0] for line in catalogue_lines(catalog)[1:-1]
           if not line.startswith(" ")]
    qwen = [i for i in ids if i.startswith("qwen2.5-")]
    assert qwen == [f"qwen2.5-{s}-instruct" for s in ("0.5b", "1.5b", "3b", "7b", "14b",
                                                      "32b", "72b")]
    assert "smollm2-135m" in ids


def test_a_stage_copy_is_listed_with_its_layers(tmp_path: Path) -> None:
    card = _card("m-7b", 4_680_000_000, [])
    stage = StoreEntry(directory="m-7b-mlx-layers-0-16", model_id=ModelId("m-7b"),
                       format="mlx", layers=(0, 16),
                       files=[StoredFile(name="config.json", size_bytes=2, sha256="c" * 64)])
    (tmp_path / stage.directory).mkdir()
    write_entry(tmp_path / stage.directory, stage)
    catalog = ModelCatalog([card], tmp_path, stored_entries(tmp_path))
    _, line, path = catalogue_lines(catalog)
    # Layers as people count them, both ends included, as the dashboard shows them.
    assert line.split()[-3:] == ["mlx", "layers", "0–15"]
    assert path.split() == ["mlx", "layers", "0–15", str(tmp_path / stage.directory)]


def test_the_cluster_listing_names_each_copy_on_each_node_and_each_pull() -> None:
    stage = TINY.model_copy(update={"format": "mlx", "layers": (0, 4)})
    pulling = StorePull(model_id=ModelId("qwen"), repo="Qwen/Q-GGUF", done_bytes=2_000_000,
                        total_bytes=8_000_000, updated_at=0.0)
    lines = cluster_lines({
        NodeId("node-b"): reading("node-b", held=[stage]).model_copy(update={"pulls": [pulling]}),
        NodeId("node-a"): reading("node-a", held=[TINY]),
    })
    assert [line.split() for line in lines] == [
        ["MODEL", "NODE", "HOLDS"],
        ["tiny", "node-a", "gguf", "whole,", "3", "B"],
        ["tiny", "node-b", "mlx", "layers", "0–3,", "3", "B"],
        ["qwen", "node-b", "pulling", "Qwen/Q-GGUF:", "1.91", "MiB", "of", "7.63", "MiB"]]
    assert cluster_lines({})[0].startswith("no node's store holds a model")
