"""Signed cluster messages: every publication carries its sender's node id, credential
and an Ed25519 signature over the key and payload, so a receiver knows who sent it.

The credential is the sender's node certificate (checked against the cluster's CA), or on
an `--insecure` cluster its raw public key (pinned to the node id the first time it is
seen). A verified credential is cached, so a message costs one signature check.

Keys and certificates are `cryptography`'s (OpenSSL); the signatures on messages are made
and checked with libsodium (PyNaCl), the same Ed25519 (RFC 8032) on the same raw keys, at
about half OpenSSL's cost on the machines measured (bench/README.md, `scale.py`). Its check
is strict: a non-canonical S, a small-order R or public key, or a non-canonical key
encoding is refused.
"""

from collections.abc import Callable
from dataclasses import dataclass, field

import msgpack
import nacl.bindings
import nacl.exceptions
from cryptography import x509
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from skulk.shared.types.ids import NodeId
from skulk.shared.types.wire import MAX_PAYLOAD_BYTES
from skulk.trust.authority import UntrustedCertificate, node_of

_VERSION = 1
_SIGNATURE_BYTES = nacl.bindings.crypto_sign_BYTES
MAX_CACHED_CREDENTIALS = 4096
# Node id, certificate and signature around the payload.
MAX_ENVELOPE_OVERHEAD = 16 << 10


class Rejected(ValueError):
    """A message whose origin cannot be established; `reason` labels it for counting."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _signed_bytes(key: str, payload: bytes) -> bytes:
    # The key is signed too: a message cannot be replayed onto another topic or address.
    return key.encode() + b"\x00" + payload


@dataclass(frozen=True)
class MessageSigner:
    node_id: NodeId
    private_key: Ed25519PrivateKey
    credential: bytes  # DER node certificate, or the raw public key when insecure
    # libsodium's form of `private_key` (seed and public key, 64 bytes).
    _secret: bytes = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        _, secret = nacl.bindings.crypto_sign_seed_keypair(self.private_key.private_bytes_raw())
        object.__setattr__(self, "_secret", secret)

    def seal(self, key: str, payload: bytes) -> bytes:
        signature = nacl.bindings.crypto_sign(_signed_bytes(key, payload),
                                              self._secret)[:_SIGNATURE_BYTES]
        sealed: bytes = msgpack.packb(
            [_VERSION, self.node_id, self.credential, payload, signature], use_bin_type=True)
        return sealed


class MessageVerifier:
    """Opens sealed messages; `authority` None means an insecure cluster."""

    def __init__(self, authority: x509.Certificate | None,
                 is_revoked: Callable[[NodeId], bool] = lambda node: False) -> None:
        self._authority = authority
        self.is_revoked = is_revoked
        # Credential -> the node it speaks for and its raw public key.
        self._known: dict[bytes, tuple[NodeId, bytes]] = {}
        self._pinned: dict[NodeId, bytes] = {}

    @property
    def secure(self) -> bool:
        return self._authority is not None

    def open(self, key: str, sealed: bytes) -> tuple[NodeId, bytes]:
        """The sender and payload of a sealed message; raises `Rejected` otherwise."""
        if len(sealed) > MAX_PAYLOAD_BYTES + MAX_ENVELOPE_OVERHEAD:
            raise Rejected("oversized")
        try:
            version, node_id, credential, payload, signature = msgpack.unpackb(
                sealed, raw=False, use_list=True)
        except Exception as error:  # msgpack raises several unrelated types
            raise Rejected("not_an_envelope") from error
        if version != _VERSION or not isinstance(node_id, str) or not all(
                isinstance(part, bytes) for part in (credential, payload, signature)):
            raise Rejected("not_an_envelope")
        signer, public_key = self._credential(NodeId(node_id), credential)
        if signer != node_id:
            raise Rejected("credential_of_another_node")
        if self.is_revoked(signer):
            raise Rejected("revoked_node")
        if len(signature) != _SIGNATURE_BYTES:
            raise Rejected("bad_signature")
        try:
            nacl.bindings.crypto_sign_open(signature + _signed_bytes(key, payload), public_key)
        except nacl.exceptions.BadSignatureError as error:
            raise Rejected("bad_signature") from error
        return signer, payload

    def node_key(self, credential: bytes) -> tuple[NodeId, Ed25519PublicKey]:
        """The node a credential speaks for (a DER certificate of this cluster, or a raw
        key on an insecure cluster); raises `Rejected`."""
        node, public_key = self._credential(None, credential)
        return node, Ed25519PublicKey.from_public_bytes(public_key)

    def _credential(self, claimed: NodeId | None, credential: bytes) -> tuple[NodeId, bytes]:
        known = self._known.get(credential)
        if known is not None:
            return known
        if self._authority is None:
            if claimed is None or len(credential) != 32:
                raise Rejected("untrusted_credential")
            pinned = self._pinned.setdefault(claimed, credential)
            if pinned != credential:
                raise Rejected("credential_of_another_node")
            known = claimed, credential  # libsodium refuses a key that is not a sound point
        else:
            try:
                node, public_key = node_of(x509.load_der_x509_certificate(credential),
                                           self._authority)
            except (ValueError, UntrustedCertificate) as error:
                raise Rejected("untrusted_credential") from error
            known = node, public_key.public_bytes_raw()
        if len(self._known) >= MAX_CACHED_CREDENTIALS:
            self._known.clear()
        self._known[credential] = known
        return known
