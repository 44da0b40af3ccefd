"""`WeightServer`: a node's store served to cluster members, one thread per connection.

The server runs in its own threads, never on the node's event loop: sending weights is
blocking file and socket I/O. The TLS handshake happens in the connection's thread (a slow
client cannot stall the accept loop), connections beyond `max_connections` are closed at
once (the fetcher moves on to another source), and `stop` closes the listening socket and
every open connection, then waits for their threads.
"""

import socket
import ssl
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cryptography import x509
from loguru import logger

from skulk.models.peers.handler import StoreServer, WeightsHandler
from skulk.models.peers.tls import client_node, server_context
from skulk.shared.types.ids import NodeId
from skulk.trust.authority import UntrustedCertificate
from skulk.trust.files import TlsFiles

HANDSHAKE_TIMEOUT_SECONDS = 20.0
# A stalled peer holds its connection slot no longer than this without sending or reading.
IDLE_TIMEOUT_SECONDS = 60.0
DEFAULT_MAX_CONNECTIONS = 16


class _HttpServer(StoreServer):
    daemon_threads = False
    block_on_close = True

    def __init__(self, address: tuple[str, int], models_dir: Path, tls: TlsFiles | None,
                 is_revoked: Callable[[NodeId], bool], max_connections: int) -> None:
        self.address_family = socket.AF_INET6 if ":" in address[0] else socket.AF_INET
        super().__init__(address, WeightsHandler)
        self.models_dir = models_dir
        self._context = None if tls is None else server_context(tls)
        self._ca = None if tls is None else x509.load_pem_x509_certificate(
            tls.ca_certificate.read_bytes())
        self._is_revoked = is_revoked
        self._slots = threading.BoundedSemaphore(max_connections)
        self._open: set[socket.socket | None] = set()
        self._open_lock = threading.Lock()
        self.refused: set[object] = set()
        self.refused_busy = 0

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self._slots.acquire(blocking=False):
            self.refused_busy += 1
            self.shutdown_request(request)
            return
        super().process_request(request, client_address)

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()

    def finish_request(self, request: Any, client_address: Any) -> None:
        connection: socket.socket = request
        connection.settimeout(HANDSHAKE_TIMEOUT_SECONDS)
        self._track(connection)
        try:
            if self._context is not None:
                plain, connection = connection, self._context.wrap_socket(
                    connection, server_side=True, do_handshake_on_connect=False)
                self._track(connection, instead_of=plain)
                assert isinstance(connection, ssl.SSLSocket)
                connection.do_handshake()
                if not self._admit(connection):
                    return
            connection.settimeout(IDLE_TIMEOUT_SECONDS)
            super().finish_request(connection, client_address)
        except OSError as error:  # ssl.SSLError included: a refused or broken handshake
            logger.debug("weights connection from {} ended: {}", client_address, error)
        finally:
            self._track(None, instead_of=connection)
            self.refused.discard(connection)
            connection.close()

    def _track(self, connection: socket.socket | None, *,
               instead_of: socket.socket | None = None) -> None:
        """Keep the set of open connections `stop` must end."""
        with self._open_lock:
            self._open.discard(instead_of)
            if connection is not None:
                self._open.add(connection)

    def _admit(self, connection: ssl.SSLSocket) -> bool:
        """Whether a handshaken client may be served at all: its certificate must name a
        node. A revoked node's requests are answered 403 (it hears why, then is dropped)."""
        assert self._ca is not None
        try:
            node = client_node(connection, self._ca)
        except UntrustedCertificate as error:
            logger.warning("weights: refused a client certificate: {}", error)
            return False
        if self._is_revoked(node):
            logger.warning("weights: refused {}, which was expelled from the cluster", node)
            self.refused.add(connection)
        return True

    def close_connections(self) -> None:
        with self._open_lock:
            for connection in self._open:
                if connection is None:
                    continue
                try:
                    connection.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass  # already closed by its peer


class WeightServer:
    """Serves `GET`/`HEAD /weights/<store directory>/<file>` and `/manifests/<store
    directory>` from `models_dir`; with `tls` None (an insecure cluster) plain HTTP."""

    def __init__(self, models_dir: Path, *, tls: TlsFiles | None,
                 is_revoked: Callable[[NodeId], bool] = lambda node: False,
                 host: str = "0.0.0.0", port: int = 0,
                 max_connections: int = DEFAULT_MAX_CONNECTIONS) -> None:
        self._settings = (models_dir, tls, is_revoked, max_connections)
        self._address = (host, port)
        self._server: _HttpServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        assert self._server is not None, "the weight server is not started"
        port: int = self._server.server_address[1]
        return port

    @property
    def scheme(self) -> str:
        return "http" if self._settings[1] is None else "https"

    @property
    def refused_busy(self) -> int:
        """Connections closed because every slot was taken."""
        return 0 if self._server is None else self._server.refused_busy

    def start(self) -> int:
        """Bind and serve in a background thread; returns the bound port."""
        models_dir, tls, is_revoked, max_connections = self._settings
        self._server = _HttpServer(self._address, models_dir, tls, is_revoked, max_connections)
        if tls is None:
            logger.warning("serving stored weights over plain HTTP on port {} (an insecure "
                           "cluster: anyone who reaches it can read them)", self.port)
        self._thread = threading.Thread(target=self._server.serve_forever,
                                        kwargs={"poll_interval": 0.2},
                                        name="weight-server", daemon=True)
        self._thread.start()
        return self.port

    def stop(self) -> None:
        """Stop accepting, close open connections and wait for their threads."""
        server, self._server = self._server, None
        if server is None:
            return
        server.shutdown()
        server.close_connections()
        server.server_close()
        if self._thread is not None:
            self._thread.join()

    def __enter__(self) -> "WeightServer":
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()
