import stat
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from skulk.node_identity import KEY_FILE, load_or_create_identity, node_id_for


def test_identity_survives_a_restart_and_its_id_comes_from_its_key(tmp_path: Path) -> None:
    first = load_or_create_identity(tmp_path / "data")
    again = load_or_create_identity(tmp_path / "data")
    assert first.node_id == again.node_id == node_id_for(first.private_key)
    assert first.public_key_hex == again.public_key_hex
    assert stat.S_IMODE((tmp_path / "data" / KEY_FILE).stat().st_mode) == 0o600


def test_signatures_verify_with_the_published_public_key(tmp_path: Path) -> None:
    identity = load_or_create_identity(tmp_path)
    public = Ed25519PublicKey.from_public_bytes(bytes.fromhex(identity.public_key_hex))
    public.verify(identity.sign(b"hello"), b"hello")  # raises when it does not verify


def test_a_data_dir_from_before_keys_keeps_its_id(tmp_path: Path) -> None:
    (tmp_path / "node_id").write_text("node-0123456789ab\n")
    assert load_or_create_identity(tmp_path).node_id == "node-0123456789ab"


def test_an_empty_id_file_is_replaced(tmp_path: Path) -> None:
    (tmp_path / "node_id").write_text("\n")
    assert load_or_create_identity(tmp_path).node_id.startswith("node-")


def test_a_foreign_key_file_is_refused_with_a_remedy(tmp_path: Path) -> None:
    (tmp_path / KEY_FILE).write_text("not a key")
    with pytest.raises(ValueError):
        load_or_create_identity(tmp_path)
