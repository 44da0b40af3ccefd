"""Admitting a new member: the joiner sends a certificate request with its proof of the
join token; a node holding the cluster's CA answers with the node certificate.

One JSON line each way over TCP. Nothing secret crosses: the request holds a public key,
the proof is an HMAC, the answer holds two certificates. The joiner checks the CA
certificate against the token's fingerprint, so a machine in the middle can neither admit
it to another cluster nor learn anything that lets it join.
"""

import json
from collections.abc import Callable
from dataclasses import dataclass

import anyio
import anyio.abc
from anyio.abc import SocketStream
from cryptography import x509
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from loguru import logger

from skulk.shared.endpoints import endpoint_host, endpoint_port
from skulk.shared.types.ids import NodeId
from skulk.trust.authority import (
    UntrustedCertificate,
    certificate_request,
    fingerprint,
    issue_node_certificate,
    node_of,
)
from skulk.trust.join_token import JoinToken, admission_proof, proof_holds

MAX_LINE_BYTES = 16 * 1024
EXCHANGE_TIMEOUT_SECONDS = 10.0
# A wrong proof costs its sender this long, so guessing is slow as well as hopeless.
REFUSAL_DELAY_SECONDS = 1.0


class EnrollmentRefused(RuntimeError):
    """The cluster did not admit this node; the message says why and what to do."""


@dataclass(frozen=True)
class Admission:
    certificate: x509.Certificate
    ca_certificate: x509.Certificate


@dataclass
class Admitter:
    """The issuing side: holds the CA, and reads the join secret at each request (so a
    rotated token takes effect without a restart)."""

    ca_key: Ed25519PrivateKey
    ca_certificate: x509.Certificate
    secret: Callable[[], bytes]
    admitted: int = 0
    refused: int = 0

    def answer(self, line: bytes) -> tuple[dict[str, str], NodeId | None]:
        """The reply to one request line, and the node admitted (None if refused)."""
        try:
            asked = json.loads(line)
            request = x509.load_pem_x509_csr(asked["request"].encode())
            proof = bytes.fromhex(asked["proof"])
        except (ValueError, KeyError, TypeError, AttributeError):
            return {"error": "malformed enrollment request"}, None
        if not proof_holds(self.secret(), request.public_bytes(Encoding.DER), proof):
            return {"error": "the join token is not this cluster's current one: ask an "
                             "operator for the token `skulk cluster token` prints"}, None
        try:
            certificate = issue_node_certificate(self.ca_key, self.ca_certificate, request)
            node_id, _ = node_of(certificate, self.ca_certificate)
        except UntrustedCertificate as error:
            return {"error": str(error)}, None
        return {"certificate": certificate.public_bytes(Encoding.PEM).decode(),
                "authority": self.ca_certificate.public_bytes(Encoding.PEM).decode()}, node_id

    async def handle(self, stream: SocketStream) -> None:
        async with stream:
            try:
                with anyio.fail_after(EXCHANGE_TIMEOUT_SECONDS):
                    line = await _read_line(stream)
                    reply, node_id = self.answer(line)
                    if node_id is None:
                        self.refused += 1
                        logger.warning("refused a node's enrollment: {}", reply["error"])
                        await anyio.sleep(REFUSAL_DELAY_SECONDS)
                    else:
                        self.admitted += 1
                        logger.info("admitted node {} to the cluster", node_id)
                    await stream.send(json.dumps(reply).encode() + b"\n")
            except (TimeoutError, anyio.EndOfStream, anyio.BrokenResourceError, OSError,
                    ValueError):
                pass  # a peer that hangs up or sends junk gets nothing


async def _read_line(stream: SocketStream) -> bytes:
    received = b""
    while b"\n" not in received:
        received += await stream.receive(4096)
        if len(received) > MAX_LINE_BYTES:
            raise ValueError("enrollment line too long")
    return received.split(b"\n", 1)[0]


async def enroll(host: str, token: JoinToken, node_id: NodeId,
                 key: Ed25519PrivateKey) -> Admission:
    """Ask the node at `host` (port from the token) for this node's certificate."""
    request = certificate_request(node_id, key)
    proof = admission_proof(token.secret, request.public_bytes(Encoding.DER))
    line = json.dumps({"request": request.public_bytes(Encoding.PEM).decode(),
                       "proof": proof.hex()}).encode() + b"\n"
    try:
        with anyio.fail_after(EXCHANGE_TIMEOUT_SECONDS + REFUSAL_DELAY_SECONDS):
            async with await anyio.connect_tcp(host, token.port) as stream:
                await stream.send(line)
                reply = json.loads(await _read_line(stream))
    except (OSError, TimeoutError, anyio.EndOfStream, ValueError) as error:
        raise EnrollmentRefused(
            f"could not reach the cluster's admitting node at {host}:{token.port} "
            f"({type(error).__name__}: {error}); is the node that printed the token running, "
            "and is this the host of its --listen endpoint?") from error
    if "error" in reply:
        raise EnrollmentRefused(f"the cluster refused this node: {reply['error']}")
    return _check_admission(reply, token, key)


def _check_admission(reply: dict[str, str], token: JoinToken,
                     key: Ed25519PrivateKey) -> Admission:
    try:
        certificate = x509.load_pem_x509_certificate(reply["certificate"].encode())
        authority = x509.load_pem_x509_certificate(reply["authority"].encode())
    except (KeyError, ValueError) as error:
        raise EnrollmentRefused("the admitting node's answer is malformed") from error
    if fingerprint(authority) != token.ca_fingerprint:
        raise EnrollmentRefused("the admitting node's authority is not the one the token "
                                "names: wrong cluster, or someone in the middle")
    try:
        _, public_key = node_of(certificate, authority)
    except UntrustedCertificate as error:
        raise EnrollmentRefused(f"the issued certificate is unusable: {error}") from error
    if public_key.public_bytes(Encoding.Raw, PublicFormat.Raw) != \
            key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw):
        raise EnrollmentRefused("the issued certificate is for another key")
    return Admission(certificate=certificate, ca_certificate=authority)


async def serve_admissions(admitter: Admitter, host: str, port: int, *,
                           task_status: anyio.abc.TaskStatus[int]) -> None:
    """Admit new members on `host:port` (0: any free port); reports the bound port."""
    listener = await anyio.create_tcp_listener(local_host=host, local_port=port)
    async with listener:
        bound = listener.extra(anyio.abc.SocketAttribute.local_port)
        task_status.started(bound)
        await listener.serve(admitter.handle)


async def admit_members(tasks: anyio.abc.TaskGroup, admitter: Admitter, listen: str,
                        port: int | None) -> int:
    """Start admitting on the host of the `listen` endpoint, at `port` (None: the listen
    port + 1, or any free port when that is 0); returns the bound port."""
    if port is None:
        port = endpoint_port(listen) + 1 if endpoint_port(listen) else 0
    bound: int = await tasks.start(serve_admissions, admitter, endpoint_host(listen), port)
    return bound
