"""Where a node keeps its trust material, under `<data dir>/trust/`.

The node's private key is the node identity's (`<data dir>/node_key.pem`): one key names
the node, signs its messages and holds its TLS certificate, and it never leaves the node.
"""

from dataclasses import dataclass
from pathlib import Path

from skulk.node_identity import KEY_FILE


@dataclass(frozen=True)
class TlsFiles:
    """What a transport needs for mutual TLS: the cluster's CA and this node's certificate."""

    ca_certificate: Path
    certificate: Path
    private_key: Path


@dataclass(frozen=True)
class TrustFiles:
    data_dir: Path

    @property
    def directory(self) -> Path:
        return self.data_dir / "trust"

    @property
    def node_key(self) -> Path:
        return self.data_dir / KEY_FILE

    @property
    def node_certificate(self) -> Path:
        return self.directory / "node_cert.pem"

    @property
    def ca_certificate(self) -> Path:
        return self.directory / "ca_cert.pem"

    @property
    def ca_key(self) -> Path:
        """Only on nodes that can admit new members (the cluster's first node)."""
        return self.directory / "ca_key.pem"

    @property
    def join_secret(self) -> Path:
        return self.directory / "join_secret"

    @property
    def revoked(self) -> Path:
        """Expelled members, refused at the TLS layer from the next start."""
        return self.directory / "revoked.json"

    @property
    def enrollment_port(self) -> Path:
        """The port this node last admitted new members on (for `skulk cluster token`)."""
        return self.directory / "enrollment_port"

    def tls_files(self) -> TlsFiles:
        """The files a Zenoh session of this node opens its TLS links with."""
        return TlsFiles(ca_certificate=self.ca_certificate, certificate=self.node_certificate,
                        private_key=self.node_key)
