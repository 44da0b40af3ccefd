from pathlib import Path

from skulk.node_identity import load_or_create_node_id


def test_node_id_survives_a_restart(tmp_path: Path) -> None:
    first = load_or_create_node_id(tmp_path / "data")
    assert first.startswith("node-")
    assert load_or_create_node_id(tmp_path / "data") == first


def test_an_empty_id_file_is_replaced(tmp_path: Path) -> None:
    (tmp_path / "node_id").write_text("\n")
    assert load_or_create_node_id(tmp_path).startswith("node-")
