"""TLS contexts for the weights endpoint, from the cluster's trust material.

Both sides present their node certificate (Ed25519, issued by the cluster CA) and require
the other's, TLS 1.3 only. A client that knows which node it is fetching from checks the
server certificate names it (node certificates carry the node id as their DNS name); the
server maps the client certificate to its node id to refuse revoked members.
"""

import ssl

from cryptography import x509

from skulk.shared.types.ids import NodeId
from skulk.trust.authority import node_of
from skulk.trust.files import TlsFiles


def server_context(tls: TlsFiles) -> ssl.SSLContext:
    """A server context that requires a client certificate from the cluster CA."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_3
    context.verify_mode = ssl.CERT_REQUIRED
    context.load_verify_locations(cafile=str(tls.ca_certificate))
    context.load_cert_chain(str(tls.certificate), str(tls.private_key))
    return context


def client_context(tls: TlsFiles, *, check_node: bool) -> ssl.SSLContext:
    """A client context presenting this node's certificate and trusting only the cluster
    CA; `check_node` checks the server's certificate names the node asked for (given to
    the connection as its TLS server name)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.minimum_version = ssl.TLSVersion.TLSv1_3
    context.verify_mode = ssl.CERT_REQUIRED
    context.check_hostname = check_node
    context.load_verify_locations(cafile=str(tls.ca_certificate))
    context.load_cert_chain(str(tls.certificate), str(tls.private_key))
    return context


def client_node(connection: ssl.SSLSocket, ca_certificate: x509.Certificate) -> NodeId:
    """The node id of a verified client (raises UntrustedCertificate if the certificate
    does not name one, which the handshake's CA check has otherwise passed)."""
    der = connection.getpeercert(binary_form=True)
    if der is None:
        raise ssl.SSLError("the client presented no certificate")
    node, _key = node_of(x509.load_der_x509_certificate(der), ca_certificate)
    return node
