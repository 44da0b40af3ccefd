"""A node's trust at start: make the cluster (first node), join it with a token, or
load what an earlier start kept; or, with `--insecure`, trust the network."""

import secrets
from dataclasses import dataclass
from pathlib import Path

from anyio.abc import TaskGroup
from cryptography import x509
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import (
    Encoding,
    NoEncryption,
    PrivateFormat,
    PublicFormat,
    load_pem_private_key,
)
from loguru import logger

from skulk.durable_files import write_file_atomically
from skulk.node_identity import NodeIdentity
from skulk.shared.endpoints import endpoint_host
from skulk.shared.types.ids import NodeId
from skulk.trust.authority import (
    UntrustedCertificate,
    certificate_request,
    create_authority,
    fingerprint,
    issue_node_certificate,
    node_of,
)
from skulk.trust.enrollment import Admitter, EnrollmentRefused, admit_members, enroll
from skulk.trust.envelope import MessageSigner, MessageVerifier
from skulk.trust.files import TlsFiles, TrustFiles
from skulk.trust.join_token import JoinToken


class TrustError(RuntimeError):
    """The node cannot start with the trust it was given; the message says what to do."""


@dataclass(frozen=True)
class NodeTrust:
    signer: MessageSigner
    verifier: MessageVerifier
    tls: TlsFiles | None  # None: an insecure cluster
    admitter: Admitter | None  # this node can admit new members
    created: bool = False  # this start made the cluster

    @property
    def secure(self) -> bool:
        return self.tls is not None


def insecure_trust(identity: NodeIdentity) -> NodeTrust:
    public = identity.private_key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
    return NodeTrust(signer=MessageSigner(identity.node_id, identity.private_key, public),
                     verifier=MessageVerifier(None), tls=None, admitter=None)


async def trust_at_start(data_dir: Path, identity: NodeIdentity, *, insecure: bool,
                         join: str | None, peers: list[str], cluster_name: str) -> NodeTrust:
    """What `skulk run` starts with: `--insecure`, or the cluster's certificates."""
    if insecure:
        return insecure_trust(identity)
    return await prepare_trust(data_dir, identity, join=join, peers=peers,
                               cluster_name=cluster_name)


async def prepare_trust(data_dir: Path, identity: NodeIdentity, *, join: str | None,
                        peers: list[str], cluster_name: str) -> NodeTrust:
    """Load, join or create this node's membership of a cluster."""
    files = TrustFiles(data_dir)
    files.directory.mkdir(parents=True, exist_ok=True)
    token = _parse_token(join) if join else None
    created = False
    if files.node_certificate.exists() and files.ca_certificate.exists():
        if token is not None and fingerprint(_load_certificate(files.ca_certificate)) \
                != token.ca_fingerprint:
            raise TrustError(f"{data_dir} already belongs to another cluster: start with "
                             "another --data-dir, or remove its trust/ folder to leave that "
                             "cluster")
    elif token is not None:
        await _join(files, identity, token, peers)
    else:
        _create_cluster(files, identity, cluster_name)
        created = True
    ca_certificate = _load_certificate(files.ca_certificate)
    certificate = _load_certificate(files.node_certificate)
    _check_own_certificate(certificate, ca_certificate, identity, files)
    return NodeTrust(
        signer=MessageSigner(identity.node_id, identity.private_key,
                             certificate.public_bytes(Encoding.DER)),
        verifier=MessageVerifier(ca_certificate),
        tls=files.tls_files(),
        admitter=_admitter(files, ca_certificate), created=created)


def current_token(data_dir: Path) -> JoinToken:
    """The join token of the cluster whose CA this data dir holds."""
    files = TrustFiles(data_dir)
    if not files.ca_key.exists() or not files.join_secret.exists():
        raise TrustError(f"{data_dir} holds no cluster authority: run `skulk cluster token` "
                         "on the cluster's first node (the one that printed a token)")
    port = int(files.enrollment_port.read_text()) if files.enrollment_port.exists() else 0
    if port == 0:
        raise TrustError("the node has not started yet: start it once, then ask again")
    return JoinToken(ca_fingerprint=fingerprint(_load_certificate(files.ca_certificate)),
                     secret=files.join_secret.read_bytes(), port=port)


def rotate_join_secret(data_dir: Path) -> None:
    """A new join secret: tokens printed before stop working (members stay members)."""
    files = TrustFiles(data_dir)
    if not files.ca_key.exists():
        raise TrustError(f"{data_dir} holds no cluster authority")
    write_file_atomically(files.join_secret, secrets.token_bytes(32), mode=0o600)


def _parse_token(text: str) -> JoinToken:
    try:
        return JoinToken.decode(text)
    except ValueError as error:
        raise TrustError(f"--join: {error}") from error


def _create_cluster(files: TrustFiles, identity: NodeIdentity, cluster_name: str) -> None:
    ca_key, ca_certificate = create_authority(f"skulk cluster {cluster_name}")
    certificate = issue_node_certificate(
        ca_key, ca_certificate, certificate_request(identity.node_id, identity.private_key))
    write_file_atomically(files.ca_key, ca_key.private_bytes(
        Encoding.PEM, PrivateFormat.PKCS8, NoEncryption()), mode=0o600)
    write_file_atomically(files.join_secret, secrets.token_bytes(32), mode=0o600)
    write_file_atomically(files.ca_certificate, ca_certificate.public_bytes(Encoding.PEM))
    write_file_atomically(files.node_certificate, certificate.public_bytes(Encoding.PEM))
    logger.info("made a new cluster authority in {}", files.directory)


async def _join(files: TrustFiles, identity: NodeIdentity, token: JoinToken,
                peers: list[str]) -> None:
    if not peers:
        raise TrustError("--join needs --peer tcp/HOST:PORT naming the node that printed "
                         "the token (it admits new members)")
    failures = []
    for peer in peers:
        host = endpoint_host(peer)
        try:
            admission = await enroll(host, token, identity.node_id, identity.private_key)
        except EnrollmentRefused as error:
            failures.append(str(error))
            continue
        write_file_atomically(files.ca_certificate,
                              admission.ca_certificate.public_bytes(Encoding.PEM))
        write_file_atomically(files.node_certificate,
                              admission.certificate.public_bytes(Encoding.PEM))
        logger.info("joined the cluster through {}: certificate kept in {}", host,
                    files.directory)
        return
    raise TrustError("could not join: " + "; ".join(failures))


def _check_own_certificate(certificate: x509.Certificate, ca_certificate: x509.Certificate,
                           identity: NodeIdentity, files: TrustFiles) -> None:
    try:
        node_id, public_key = node_of(certificate, ca_certificate)
    except UntrustedCertificate as error:
        raise TrustError(f"{files.node_certificate}: {error}; remove the trust/ folder and "
                         "join again with a token") from error
    own = identity.private_key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
    if node_id != identity.node_id or public_key.public_bytes(
            Encoding.Raw, PublicFormat.Raw) != own:
        raise TrustError(f"{files.node_certificate} belongs to another node than "
                         f"{identity.node_id}; remove the trust/ folder and join again")


def _admitter(files: TrustFiles, ca_certificate: x509.Certificate) -> Admitter | None:
    if not files.ca_key.exists():
        return None
    ca_key = load_pem_private_key(files.ca_key.read_bytes(), password=None)
    if not isinstance(ca_key, Ed25519PrivateKey):
        raise TrustError(f"{files.ca_key} is not an Ed25519 key")
    return Admitter(ca_key=ca_key, ca_certificate=ca_certificate,
                    secret=files.join_secret.read_bytes)


def _load_certificate(path: Path) -> x509.Certificate:
    return x509.load_pem_x509_certificate(path.read_bytes())


def record_admission_port(data_dir: Path, port: int) -> JoinToken:
    """Keep the port this node admits members on (for `skulk cluster token`), and return
    the token that names it."""
    write_file_atomically(TrustFiles(data_dir).enrollment_port, f"{port}\n".encode())
    return current_token(data_dir)


def ephemeral_trust(node_id: NodeId) -> NodeTrust:
    """An insecure trust under `node_id` with a fresh key (tools and tests)."""
    return insecure_trust(NodeIdentity(node_id, Ed25519PrivateKey.generate()))


async def admit_with_token(tasks: TaskGroup, trust: NodeTrust, listen: list[str],
                           admit_port: int | None, data_dir: Path) -> None:
    """On a node holding the cluster's CA: admit machines that bring the join token (and
    say how, when this start made the cluster)."""
    if trust.admitter is None or not listen:
        return
    bound = await admit_members(tasks, trust.admitter, listen[0], admit_port)
    token = record_admission_port(data_dir, bound)
    if trust.created:
        logger.warning("\n  this node made a new cluster. Join other machines with:\n"
                       "    skulk run --join {} --peer tcp/<this host>:<its cluster "
                       "port>\n  (that port is on the `cluster:` line of the banner below "
                       "and in `skulk status`; `skulk cluster token` prints the token again)",
                       token.encode())
