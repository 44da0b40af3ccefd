"""The cluster's certificate authority: an Ed25519 key and a self-signed CA certificate
made by the first node, which issues every member its node certificate.

A node certificate names its node (`CN=<node id>`) and carries that node's own public key:
the node asks for it with a certificate signing request, so its private key never leaves
it. The certificate is what Zenoh's mutual TLS checks on every link and what every signed
cluster message carries.
"""

import datetime
import hashlib

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import Encoding
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from skulk.shared.types.ids import NodeId

CA_VALIDITY = datetime.timedelta(days=3650)
NODE_VALIDITY = datetime.timedelta(days=3650)
# Certificates start a little in the past, so a member whose clock lags still accepts them.
CLOCK_SLACK = datetime.timedelta(hours=1)


class UntrustedCertificate(ValueError):
    """A certificate this cluster's authority did not issue, or one that is unusable."""


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def fingerprint(certificate: x509.Certificate) -> bytes:
    """SHA-256 of the certificate's DER encoding."""
    return hashlib.sha256(certificate.public_bytes(Encoding.DER)).digest()


def create_authority(cluster_name: str) -> tuple[Ed25519PrivateKey, x509.Certificate]:
    """A new CA key and its self-signed certificate."""
    key = Ed25519PrivateKey.generate()
    now = _now()
    certificate = (
        x509.CertificateBuilder()
        .subject_name(_name(cluster_name)).issuer_name(_name(cluster_name))
        .public_key(key.public_key()).serial_number(x509.random_serial_number())
        .not_valid_before(now - CLOCK_SLACK).not_valid_after(now + CA_VALIDITY)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(x509.KeyUsage(
            digital_signature=False, content_commitment=False, key_encipherment=False,
            data_encipherment=False, key_agreement=False, key_cert_sign=True, crl_sign=True,
            encipher_only=False, decipher_only=False), critical=True)
        .sign(key, None))
    return key, certificate


def certificate_request(node_id: NodeId, key: Ed25519PrivateKey) -> x509.CertificateSigningRequest:
    """What a node sends to be admitted: its id and public key, signed with its key."""
    return x509.CertificateSigningRequestBuilder().subject_name(_name(node_id)).sign(key, None)


def issue_node_certificate(ca_key: Ed25519PrivateKey, ca_certificate: x509.Certificate,
                           request: x509.CertificateSigningRequest) -> x509.Certificate:
    """A node certificate for the key and node id in `request` (whose signature must hold,
    proving the requester holds the key)."""
    if not request.is_signature_valid:
        raise UntrustedCertificate("the certificate request's signature does not verify")
    public_key = request.public_key()
    if not isinstance(public_key, Ed25519PublicKey):
        raise UntrustedCertificate("node keys must be Ed25519")
    node_id = _common_name(request.subject)
    now = _now()
    return (
        x509.CertificateBuilder()
        .subject_name(_name(node_id)).issuer_name(ca_certificate.subject)
        .public_key(public_key).serial_number(x509.random_serial_number())
        .not_valid_before(now - CLOCK_SLACK).not_valid_after(now + NODE_VALIDITY)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        # Zenoh's TLS wants a name in the certificate even though members do not check
        # host names (membership is the CA's signature, not an address).
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(node_id)]), critical=False)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH,
                                              ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
        .sign(ca_key, None))


def node_of(certificate: x509.Certificate, ca_certificate: x509.Certificate
            ) -> tuple[NodeId, Ed25519PublicKey]:
    """The node a certificate names and its key, if this cluster's CA issued it and it is
    in its validity period; raises `UntrustedCertificate` otherwise."""
    try:
        certificate.verify_directly_issued_by(ca_certificate)
    except (ValueError, TypeError, InvalidSignature) as error:
        raise UntrustedCertificate("not issued by this cluster's authority") from error
    now = _now()
    if not certificate.not_valid_before_utc <= now <= certificate.not_valid_after_utc:
        raise UntrustedCertificate("outside its validity period")
    public_key = certificate.public_key()
    if not isinstance(public_key, Ed25519PublicKey):
        raise UntrustedCertificate("node keys must be Ed25519")
    return NodeId(_common_name(certificate.subject)), public_key


def _common_name(name: x509.Name) -> str:
    values = name.get_attributes_for_oid(NameOID.COMMON_NAME)
    if len(values) != 1 or not isinstance(values[0].value, str) or not values[0].value:
        raise UntrustedCertificate("a node certificate names exactly one node (CN)")
    return values[0].value
