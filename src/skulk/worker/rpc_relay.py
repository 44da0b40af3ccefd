"""Members-only links to an engine's side channel that has no security of its own (ggml
RPC): the server listens on loopback only, and other nodes reach it through a pair of
relays that speak TLS with the cluster's node certificates in between.

    head runner ──TCP──▶ forwarder (head's node, 127.0.0.1:ephemeral)
                ══TLS══▶ relay server (serving node, the rank's ring port)
                ──TCP──▶ RPC server (serving node, 127.0.0.1:ephemeral)

The relay server admits a connection only when the client's certificate is one the
cluster CA issued to a member that is not revoked; the forwarder checks the server's
certificate names the node the master placed the rank on. Once the relay server has
dialled its target it sends one byte (`READY`), so a forwarder never passes on a link whose
far end is not there. Both run on an asyncio loop of their own, in a thread (`RelayLoop`),
so a busy node loop adds nothing to a token's round trips; asyncio turns Nagle off on
every TCP socket (ggml RPC is many small request/response round trips).

On an `--insecure` cluster (no trust material) the relays carry plain TCP: the same check
as the rest of that cluster's plane, which is none.
"""

import asyncio
import socket
import ssl
import threading
from collections.abc import Awaitable, Callable
from concurrent.futures import Future
from dataclasses import dataclass
from typing import TypeVar

from cryptography import x509
from loguru import logger

from skulk.models.peers.tls import client_context, server_context
from skulk.shared.types.ids import NodeId
from skulk.trust.authority import UntrustedCertificate, node_of
from skulk.trust.files import TlsFiles

READY = b"\x01"
HANDSHAKE_TIMEOUT_SECONDS = 10.0
_CHUNK = 1 << 16
T = TypeVar("T")


def free_loopback_port() -> int:
    """A TCP port free on 127.0.0.1 right now (for a server that takes a port number)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@dataclass
class Relay:
    """One listening relay; `close` stops it and ends its open links."""

    port: int
    _server: asyncio.Server
    _links: set["asyncio.Task[None]"]
    _loop: "RelayLoop"
    refused: int = 0

    @property
    def endpoint(self) -> str:
        """`127.0.0.1:port`, for a forwarder (where the head runner dials)."""
        return f"127.0.0.1:{self.port}"

    def close(self) -> None:
        async def stop() -> None:
            self._server.close()
            for link in list(self._links):
                link.cancel()
        self._loop.call(stop())


class RelayLoop:
    """An asyncio loop in a daemon thread that runs a node's relays."""

    def __init__(self) -> None:
        self._loop = asyncio.new_event_loop()
        threading.Thread(target=self._loop.run_forever, name="rpc-relays", daemon=True).start()

    def call(self, coroutine: Awaitable[T]) -> T:
        """Run `coroutine` on the relay loop and wait for its result (from another thread)."""
        future: Future[T] = asyncio.run_coroutine_threadsafe(_awaited(coroutine), self._loop)
        return future.result(timeout=30)

    def serve(self, listen: tuple[str, int], target: tuple[str, int], tls: TlsFiles | None,
              is_revoked: Callable[[NodeId], bool]) -> Relay:
        """A relay server on `listen` admitting members and carrying each link to
        `target` on loopback."""
        context = None if tls is None else server_context(tls)
        ca = None if tls is None else x509.load_pem_x509_certificate(
            tls.ca_certificate.read_bytes())

        async def admit(writer: asyncio.StreamWriter) -> bool:
            if ca is None:
                return True
            der = writer.get_extra_info("ssl_object").getpeercert(binary_form=True)
            try:
                node, _key = node_of(x509.load_der_x509_certificate(der), ca)
            except (UntrustedCertificate, ValueError) as error:
                logger.warning("rpc relay: refused a client certificate: {}", error)
                return False
            if is_revoked(node):
                logger.warning("rpc relay: refused {}, which was expelled", node)
                return False
            return True

        async def open_far(writer: asyncio.StreamWriter
                           ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter] | None:
            if not await admit(writer):
                return None
            far = await asyncio.wait_for(asyncio.open_connection(*target),
                                         HANDSHAKE_TIMEOUT_SECONDS)
            writer.write(READY)
            await writer.drain()
            return far

        return self.call(self._start(listen, open_far, context))

    def forward(self, remote: tuple[str, int], tls: TlsFiles | None,
                peer_node: NodeId | None) -> Relay:
        """A forwarder on a loopback port carrying each connection to the relay server of
        `peer_node` at `remote`."""
        context = None if tls is None else client_context(tls, check_node=peer_node is not None)

        async def open_far(_writer: asyncio.StreamWriter
                           ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter] | None:
            reader, writer = await asyncio.wait_for(asyncio.open_connection(
                *remote, ssl=context, server_hostname=peer_node if context else None),
                HANDSHAKE_TIMEOUT_SECONDS)
            greeting = await asyncio.wait_for(reader.read(len(READY)),
                                              HANDSHAKE_TIMEOUT_SECONDS)
            if greeting != READY:
                logger.warning("rpc relay: {}:{} did not reach its device server", *remote)
                writer.close()
                return None
            return reader, writer

        return self.call(self._start(("127.0.0.1", 0), open_far, None))

    async def _start(self, listen: tuple[str, int],
                     open_far: Callable[[asyncio.StreamWriter], Awaitable[
                         tuple[asyncio.StreamReader, asyncio.StreamWriter] | None]],
                     context: ssl.SSLContext | None) -> Relay:
        links: set[asyncio.Task[None]] = set()
        relay: Relay | None = None

        async def link(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            task = asyncio.current_task()
            assert task is not None and relay is not None
            links.add(task)
            far_writer: asyncio.StreamWriter | None = None
            try:
                far = await open_far(writer)
                if far is None:
                    relay.refused += 1
                    return
                far_reader, far_writer = far
                await asyncio.gather(_pipe(reader, far_writer), _pipe(far_reader, writer))
            except (TimeoutError, OSError, asyncio.IncompleteReadError) as error:
                logger.debug("rpc relay link on {} ended: {}", listen, error)
            finally:
                links.discard(task)
                for end in (writer, far_writer):
                    if end is not None:
                        end.close()

        server = await asyncio.start_server(
            link, listen[0], listen[1], ssl=context,
            ssl_handshake_timeout=HANDSHAKE_TIMEOUT_SECONDS if context else None,
            reuse_address=True)
        port = server.sockets[0].getsockname()[1]
        relay = Relay(port=port, _server=server, _links=links, _loop=self)
        return relay


async def _awaited(coroutine: Awaitable[T]) -> T:
    return await coroutine


async def _pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
    """Copy until `source` ends, then end `sink` (which ends the other direction too)."""
    try:
        while data := await source.read(_CHUNK):
            sink.write(data)
            await sink.drain()
    finally:
        sink.close()
