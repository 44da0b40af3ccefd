"""Members of one test cluster without the join exchange: certificates issued directly
by a test authority (the real exchange has its own tests)."""

from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, load_pem_private_key

from skulk.durable_files import write_file_atomically
from skulk.node_identity import load_or_create_identity
from skulk.trust.authority import certificate_request, issue_node_certificate
from skulk.trust.files import TrustFiles
from skulk.trust.setup import prepare_trust


async def make_member(authority_dir: Path, data_dir: Path) -> None:
    """Give `data_dir`'s node a certificate from the cluster made in `authority_dir`
    (made on first use)."""
    authority = TrustFiles(authority_dir)
    if not authority.ca_key.exists():
        await prepare_trust(authority_dir, load_or_create_identity(authority_dir), join=None,
                            peers=[], cluster_name="test")
    ca_key = load_pem_private_key(authority.ca_key.read_bytes(), password=None)
    assert isinstance(ca_key, Ed25519PrivateKey)
    ca_certificate = x509.load_pem_x509_certificate(authority.ca_certificate.read_bytes())
    identity = load_or_create_identity(data_dir)
    member = TrustFiles(data_dir)
    member.directory.mkdir(parents=True, exist_ok=True)
    certificate = issue_node_certificate(
        ca_key, ca_certificate, certificate_request(identity.node_id, identity.private_key))
    write_file_atomically(member.ca_certificate, authority.ca_certificate.read_bytes())
    write_file_atomically(member.node_certificate, certificate.public_bytes(Encoding.PEM))
