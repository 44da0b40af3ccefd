"""The join token: what a machine needs to become a member, printed by the first node.

It holds the fingerprint of the cluster's CA certificate (so the joiner knows it talks to
the right cluster), a secret (so the cluster knows the joiner was given the token), and
the port the first node admits members on. The secret never crosses the network: the
joiner proves it holds it with an HMAC over its certificate request. A certificate is
only ever issued for the key in that request, so a token seen by someone else lets them
join as a new node (until the token is rotated) but never act as an existing one.
"""

import base64
import binascii
from dataclasses import dataclass

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, hmac

PREFIX = "skulk-join-1."
_FINGERPRINT_BYTES = 32
_SECRET_BYTES = 32


@dataclass(frozen=True)
class JoinToken:
    ca_fingerprint: bytes
    secret: bytes
    port: int

    def encode(self) -> str:
        raw = self.ca_fingerprint + self.secret + self.port.to_bytes(2, "big")
        return PREFIX + base64.urlsafe_b64encode(raw).decode().rstrip("=")

    @classmethod
    def decode(cls, text: str) -> "JoinToken":
        """Parse a token; raises ValueError saying what is wrong with it."""
        text = text.strip()
        if not text.startswith(PREFIX):
            raise ValueError(f"a join token starts with {PREFIX!r}: copy the whole token "
                             "that `skulk cluster token` prints on the first node")
        body = text[len(PREFIX):]
        try:
            raw = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))
        except (binascii.Error, ValueError) as error:
            raise ValueError("the join token is damaged (not base64): copy it again") from error
        if len(raw) != _FINGERPRINT_BYTES + _SECRET_BYTES + 2:
            raise ValueError("the join token is damaged (wrong length): copy it again")
        return cls(ca_fingerprint=raw[:_FINGERPRINT_BYTES],
                   secret=raw[_FINGERPRINT_BYTES:_FINGERPRINT_BYTES + _SECRET_BYTES],
                   port=int.from_bytes(raw[-2:], "big"))


def admission_proof(secret: bytes, request_der: bytes) -> bytes:
    """HMAC-SHA256 of the certificate request under the token's secret."""
    mac = hmac.HMAC(secret, hashes.SHA256())
    mac.update(request_der)
    return mac.finalize()


def proof_holds(secret: bytes, request_der: bytes, proof: bytes) -> bool:
    """Whether `proof` was made with `secret` over this request (constant-time)."""
    mac = hmac.HMAC(secret, hashes.SHA256())
    mac.update(request_der)
    try:
        mac.verify(proof)
    except InvalidSignature:
        return False
    return True
