"""A node's id, kept in its data dir so it survives restarts."""

from pathlib import Path

from skulk.shared.types.ids import NodeId, new_node_id


def load_or_create_node_id(data_dir: Path) -> NodeId:
    path = data_dir / "node_id"
    if path.exists():
        stored = path.read_text().strip()
        if stored:
            return NodeId(stored)
    node_id = new_node_id()
    data_dir.mkdir(parents=True, exist_ok=True)
    temporary = path.with_suffix(".tmp")
    temporary.write_text(node_id + "\n")
    temporary.replace(path)  # atomic: a crash never leaves a half-written id
    return node_id
