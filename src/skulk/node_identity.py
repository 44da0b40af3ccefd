"""A node's identity, kept in its data dir so it survives restarts: an Ed25519 key and an
id derived from the public key (`node-` + 12 hex digits of its SHA-256).

A data dir from before keys existed keeps its stored id and gains a key. The key is written
owner-readable only. Nothing verifies signatures yet: the public key is published (`GET
/node_id`) so that peers can pin it once messages are signed.
"""

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import (
    Encoding,
    NoEncryption,
    PrivateFormat,
    PublicFormat,
    load_pem_private_key,
)

from skulk.shared.types.ids import NodeId

KEY_FILE = "node_key.pem"
ID_FILE = "node_id"


@dataclass(frozen=True)
class NodeIdentity:
    node_id: NodeId
    private_key: Ed25519PrivateKey

    @property
    def public_key_hex(self) -> str:
        return self.private_key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw).hex()

    def sign(self, message: bytes) -> bytes:
        return self.private_key.sign(message)


def node_id_for(private_key: Ed25519PrivateKey) -> NodeId:
    public = private_key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
    return NodeId(f"node-{hashlib.sha256(public).hexdigest()[:12]}")


def load_or_create_identity(data_dir: Path) -> NodeIdentity:
    data_dir.mkdir(parents=True, exist_ok=True)
    key = _load_or_create_key(data_dir / KEY_FILE)
    id_path = data_dir / ID_FILE
    stored = id_path.read_text().strip() if id_path.exists() else ""
    if stored:
        return NodeIdentity(NodeId(stored), key)
    node_id = node_id_for(key)
    _write_atomically(id_path, (node_id + "\n").encode())
    return NodeIdentity(node_id, key)


def _load_or_create_key(path: Path) -> Ed25519PrivateKey:
    if path.exists():
        loaded = load_pem_private_key(path.read_bytes(), password=None)
        if not isinstance(loaded, Ed25519PrivateKey):
            raise ValueError(f"{path} does not hold an Ed25519 key; move it away to make "
                             "a new identity")
        return loaded
    key = Ed25519PrivateKey.generate()
    _write_atomically(path, key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8,
                                              NoEncryption()), mode=0o600)
    return key


def _write_atomically(path: Path, data: bytes, mode: int = 0o644) -> None:
    temporary = path.with_suffix(".tmp")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(descriptor, "wb") as file:
        file.write(data)
    temporary.replace(path)  # atomic: a crash never leaves a half-written file
