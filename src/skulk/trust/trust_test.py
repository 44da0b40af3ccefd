"""The trust pieces without processes: tokens, admission, certificates, envelopes."""

import json
from pathlib import Path
from typing import cast

import anyio
import pytest
from cryptography import x509
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from skulk.node_identity import NodeIdentity, load_or_create_identity
from skulk.shared.types.ids import NodeId
from skulk.trust.authority import (
    UntrustedCertificate,
    certificate_request,
    create_authority,
    fingerprint,
    issue_node_certificate,
    node_of,
)
from skulk.trust.enrollment import Admitter, EnrollmentRefused, enroll, serve_admissions
from skulk.trust.envelope import MessageSigner, MessageVerifier, Rejected
from skulk.trust.join_token import JoinToken
from skulk.trust.setup import TrustError, current_token, prepare_trust, record_admission_port


def identity(name: str) -> NodeIdentity:
    return NodeIdentity(NodeId(name), Ed25519PrivateKey.generate())


def test_a_token_round_trips_and_a_damaged_one_says_so() -> None:
    token = JoinToken(ca_fingerprint=b"f" * 32, secret=b"s" * 32, port=7448)
    assert JoinToken.decode(token.encode()) == token
    with pytest.raises(ValueError, match="starts with"):
        JoinToken.decode("hello")
    with pytest.raises(ValueError, match="damaged"):
        JoinToken.decode(token.encode()[:-5])


def test_a_certificate_names_its_node_and_only_its_authority_vouches_for_it() -> None:
    ca_key, ca = create_authority("one")
    _, other_ca = create_authority("two")
    node = identity("node-a")
    certificate = issue_node_certificate(ca_key, ca, certificate_request(node.node_id,
                                                                          node.private_key))
    assert node_of(certificate, ca)[0] == "node-a"
    with pytest.raises(UntrustedCertificate):
        node_of(certificate, other_ca)


def test_the_admitter_issues_only_to_holders_of_the_secret() -> None:
    ca_key, ca = create_authority("c")
    admitter = Admitter(ca_key=ca_key, ca_certificate=ca, secret=lambda: b"k" * 32)
    node = identity("node-b")
    from cryptography.hazmat.primitives.serialization import Encoding

    from skulk.trust.join_token import admission_proof
    request = certificate_request(node.node_id, node.private_key)
    der, pem = request.public_bytes(Encoding.DER), request.public_bytes(Encoding.PEM).decode()
    def line(secret: bytes) -> bytes:
        return json.dumps({"request": pem,
                           "proof": admission_proof(secret, der).hex()}).encode()

    reply, admitted = admitter.answer(line(b"k" * 32))
    assert admitted == "node-b" and "certificate" in reply
    reply, admitted = admitter.answer(line(b"x" * 32))
    assert admitted is None and "not this cluster's current" in reply["error"]
    assert admitter.answer(b"{nonsense")[1] is None


@pytest.mark.anyio
async def test_a_node_joins_over_loopback_and_a_wrong_cluster_is_detected(
        tmp_path: Path) -> None:
    first = await prepare_trust(tmp_path / "a", load_or_create_identity(tmp_path / "a"),
                                join=None, peers=[], cluster_name="c")
    assert first.admitter is not None and first.created
    async with anyio.create_task_group() as tasks:
        port = await tasks.start(serve_admissions, first.admitter, "127.0.0.1", 0)
        token = record_admission_port(tmp_path / "a", port)
        assert current_token(tmp_path / "a") == token
        joined = await prepare_trust(tmp_path / "b", load_or_create_identity(tmp_path / "b"),
                                     join=token.encode(), peers=["tcp/127.0.0.1:7447"],
                                     cluster_name="c")
        assert joined.admitter is None and not joined.created
        # The joiner's messages verify at the first node, and the other way round.
        sealed = joined.signer.seal("k", b"hello")
        assert first.verifier.open("k", sealed) == (joined.signer.node_id, b"hello")
        again = await prepare_trust(tmp_path / "b", load_or_create_identity(tmp_path / "b"),
                                    join=None, peers=[], cluster_name="c")
        assert again.signer.credential == joined.signer.credential
        impostor = JoinToken(ca_fingerprint=b"\0" * 32, secret=token.secret, port=port)
        with pytest.raises(EnrollmentRefused, match="not the one the token names"):
            await enroll("127.0.0.1", impostor, NodeId("node-c"),
                         Ed25519PrivateKey.generate())
        with pytest.raises(TrustError, match="another cluster"):
            await prepare_trust(tmp_path / "b", load_or_create_identity(tmp_path / "b"),
                                join=impostor.encode(), peers=[], cluster_name="c")
        tasks.cancel_scope.cancel()
    authority = cast(x509.Certificate, first.verifier._authority)  # set once trust is prepared
    assert fingerprint(authority) == token.ca_fingerprint


def test_a_signature_under_another_authority_or_from_a_revoked_node_is_refused() -> None:
    ca_key, ca = create_authority("one")
    other_key, other_ca = create_authority("two")
    node = identity("node-a")
    from cryptography.hazmat.primitives.serialization import Encoding
    request = certificate_request(node.node_id, node.private_key)
    ours = issue_node_certificate(ca_key, ca, request).public_bytes(Encoding.DER)
    theirs = issue_node_certificate(other_key, other_ca, request).public_bytes(Encoding.DER)
    revoked: set[str] = set()
    verifier = MessageVerifier(ca, is_revoked=lambda n: n in revoked)
    assert verifier.open("k", MessageSigner(node.node_id, node.private_key, ours).seal(
        "k", b"x"))[0] == "node-a"
    with pytest.raises(Rejected, match="untrusted_credential"):
        verifier.open("k", MessageSigner(node.node_id, node.private_key, theirs).seal("k", b"x"))
    with pytest.raises(Rejected, match="credential_of_another_node"):
        verifier.open("k", MessageSigner(NodeId("node-b"), node.private_key, ours).seal(
            "k", b"x"))
    revoked.add("node-a")
    with pytest.raises(Rejected, match="revoked_node"):
        verifier.open("k", MessageSigner(node.node_id, node.private_key, ours).seal("k", b"x"))
