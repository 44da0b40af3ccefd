"""Sealed messages: libsodium's signatures are OpenSSL's Ed25519, on the same keys, and the
check refuses what it must."""

import msgpack
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from skulk.node_identity import node_id_for
from skulk.trust.envelope import MessageSigner, MessageVerifier, Rejected

KEY = "skulk/abc/local_events"
PAYLOAD = b"\x92\x01\xa3one"


def _signer() -> MessageSigner:
    private = Ed25519PrivateKey.generate()
    return MessageSigner(node_id_for(private), private, private.public_key().public_bytes_raw())


def _parts(sealed: bytes) -> list[object]:
    parts: list[object] = msgpack.unpackb(sealed, raw=False)
    return parts


def _resealed(parts: list[object]) -> bytes:
    packed: bytes = msgpack.packb(parts, use_bin_type=True)
    return packed


def test_a_sealed_signature_is_the_keys_own_ed25519_signature() -> None:
    """Ed25519 is deterministic: libsodium's signature equals OpenSSL's on the same key, so
    nodes of either kind, and every existing key file, keep working together."""
    signer = _signer()
    version, node, credential, payload, signature = _parts(signer.seal(KEY, PAYLOAD))
    assert (version, node, credential, payload) == (1, signer.node_id, signer.credential,
                                                    PAYLOAD)
    signed = KEY.encode() + b"\x00" + PAYLOAD
    assert signature == signer.private_key.sign(signed)
    signer.private_key.public_key().verify(signature, signed)  # raises when it does not hold


def test_a_message_signed_by_openssl_opens() -> None:
    signer = _signer()
    signature = signer.private_key.sign(KEY.encode() + b"\x00" + PAYLOAD)
    sealed = _resealed([1, signer.node_id, signer.credential, PAYLOAD, signature])
    assert MessageVerifier(None).open(KEY, sealed) == (signer.node_id, PAYLOAD)


def test_a_changed_payload_key_or_signature_is_refused() -> None:
    signer, verifier = _signer(), MessageVerifier(None)
    sealed = signer.seal(KEY, PAYLOAD)
    assert verifier.open(KEY, sealed) == (signer.node_id, PAYLOAD)
    with pytest.raises(Rejected, match="bad_signature"):
        verifier.open(KEY + "/other", sealed)  # replayed onto another topic
    parts = _parts(sealed)
    for changed in (
            [*parts[:3], PAYLOAD + b"!", parts[4]],
            [*parts[:4], bytes([parts[4][0] ^ 1]) + parts[4][1:]],  # type: ignore[index]
            [*parts[:4], parts[4][:63]],  # type: ignore[index]
            [*parts[:4], b""]):
        with pytest.raises(Rejected, match="bad_signature"):
            verifier.open(KEY, _resealed(changed))


def test_a_non_canonical_s_is_refused() -> None:
    """S + L verifies under a lax check; libsodium's strict one refuses it."""
    order = 2**252 + 27742317777372353535851937790883648493
    signer, verifier = _signer(), MessageVerifier(None)
    parts = _parts(signer.seal(KEY, PAYLOAD))
    signature = parts[4]
    assert isinstance(signature, bytes)
    s = int.from_bytes(signature[32:], "little") + order
    assert s < 2**256
    parts[4] = signature[:32] + s.to_bytes(32, "little")
    with pytest.raises(Rejected, match="bad_signature"):
        verifier.open(KEY, _resealed(parts))


def test_a_small_order_public_key_is_refused() -> None:
    """The identity point as a key with the identity as R and S = 0 is an equation every
    message satisfies (OpenSSL's check accepts it, tried with cryptography 50); libsodium's
    refuses the key, so nobody can sign as such a node without a private key."""
    identity = (1).to_bytes(32, "little")
    forged = _resealed([1, "node-x", identity, PAYLOAD, identity + bytes(32)])
    with pytest.raises(Rejected, match="bad_signature"):
        MessageVerifier(None).open(KEY, forged)
