"""The members a node knows were expelled, kept in its data dir so that its next start
refuses their TLS links (their messages are refused at once, from the State)."""

import json
from pathlib import Path

from skulk.durable_files import write_file_atomically
from skulk.shared.types.ids import NodeId
from skulk.trust.files import TrustFiles


def load_revoked(data_dir: Path) -> list[NodeId]:
    path = TrustFiles(data_dir).revoked
    if not path.exists():
        return []
    try:
        loaded = json.loads(path.read_text())
    except ValueError:
        return []  # a damaged list is rebuilt from the State once the node syncs
    return [NodeId(node) for node in loaded if isinstance(node, str)]


def save_revoked(data_dir: Path, nodes: list[NodeId]) -> None:
    if sorted(nodes) != sorted(load_revoked(data_dir)):
        write_file_atomically(TrustFiles(data_dir).revoked, json.dumps(sorted(nodes)).encode())
