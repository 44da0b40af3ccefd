"""The device relays: bytes cross between members only, and a link whose far end is not
there is never passed on."""

import socket
import ssl
import threading
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from skulk.node_identity import load_or_create_identity
from skulk.shared.types.ids import NodeId
from skulk.testing.cluster_trust import make_member
from skulk.trust.files import TlsFiles, TrustFiles
from skulk.worker.rpc_relay import READY, RelayLoop, free_loopback_port


def member(authority: Path, data_dir: Path) -> tuple[NodeId, TlsFiles]:
    anyio.run(make_member, authority, data_dir)
    return (load_or_create_identity(data_dir).node_id, TrustFiles(data_dir).tls_files())


class EchoServer:
    """A stand-in device server on loopback: echoes each connection's bytes."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self.listener.getsockname()[1]
        self.accepted = 0
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                connection, _ = self.listener.accept()
            except OSError:
                return
            self.accepted += 1
            with connection:
                while data := connection.recv(4096):
                    connection.sendall(data)


@pytest.fixture
def echo() -> Iterator[EchoServer]:
    server = EchoServer()
    yield server
    server.listener.close()


def round_trip(endpoint: str, payload: bytes) -> bytes:
    host, _, port = endpoint.rpartition(":")
    with socket.create_connection((host, int(port)), timeout=5) as connection:
        connection.sendall(payload)
        received = b""
        while len(received) < len(payload):
            data = connection.recv(65536)
            if not data:
                break
            received += data
        return received


def test_a_member_reaches_the_device_server_through_both_relays(
        tmp_path: Path, echo: EchoServer) -> None:
    serving, serving_tls = member(tmp_path / "ca", tmp_path / "a")
    _head, head_tls = member(tmp_path / "ca", tmp_path / "b")
    loop = RelayLoop()
    relay = loop.serve(("127.0.0.1", 0), ("127.0.0.1", echo.port), serving_tls,
                       lambda node: False)
    forwarder = loop.forward(("127.0.0.1", relay.port), head_tls, serving)
    payload = bytes(range(256)) * 1000  # several TLS records each way
    assert round_trip(forwarder.endpoint, payload) == payload
    assert round_trip(forwarder.endpoint, b"again") == b"again"
    relay.close()
    forwarder.close()


def test_a_stranger_with_a_certificate_of_another_cluster_is_refused(
        tmp_path: Path, echo: EchoServer) -> None:
    _serving, serving_tls = member(tmp_path / "ca", tmp_path / "a")
    _stranger, stranger_tls = member(tmp_path / "other-ca", tmp_path / "x")
    loop = RelayLoop()
    relay = loop.serve(("127.0.0.1", 0), ("127.0.0.1", echo.port), serving_tls,
                       lambda node: False)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    context.load_cert_chain(str(stranger_tls.certificate), str(stranger_tls.private_key))
    with socket.create_connection(("127.0.0.1", relay.port), timeout=5) as raw:
        with pytest.raises((ssl.SSLError, OSError)):
            with context.wrap_socket(raw) as tls:
                tls.sendall(b"hello")
                assert tls.recv(1) != READY  # never reached: the handshake or read fails
                raise OSError("no greeting")
    assert echo.accepted == 0
    relay.close()


def test_plain_tcp_to_a_members_only_relay_never_reaches_the_server(
        tmp_path: Path, echo: EchoServer) -> None:
    _serving, serving_tls = member(tmp_path / "ca", tmp_path / "a")
    loop = RelayLoop()
    relay = loop.serve(("127.0.0.1", 0), ("127.0.0.1", echo.port), serving_tls,
                       lambda node: False)
    hello = b"\x0e" + bytes(64)  # a ggml RPC hello, in the clear
    with socket.create_connection(("127.0.0.1", relay.port), timeout=5) as raw:
        raw.sendall(hello)
        try:
            reply = raw.recv(64)  # a TLS alert at most, then the end
        except ConnectionResetError:
            reply = b""
    assert not reply.startswith(READY) and hello not in reply
    assert echo.accepted == 0
    relay.close()


def test_a_revoked_member_is_refused(tmp_path: Path, echo: EchoServer) -> None:
    serving, serving_tls = member(tmp_path / "ca", tmp_path / "a")
    head, head_tls = member(tmp_path / "ca", tmp_path / "b")
    loop = RelayLoop()
    relay = loop.serve(("127.0.0.1", 0), ("127.0.0.1", echo.port), serving_tls,
                       lambda node: node == head)
    forwarder = loop.forward(("127.0.0.1", relay.port), head_tls, serving)
    assert round_trip(forwarder.endpoint, b"hello") == b""
    assert relay.refused == 1 and echo.accepted == 0
    relay.close()
    forwarder.close()


def test_a_forwarder_to_a_relay_whose_server_is_gone_closes_the_link(tmp_path: Path) -> None:
    serving, serving_tls = member(tmp_path / "ca", tmp_path / "a")
    _head, head_tls = member(tmp_path / "ca", tmp_path / "b")
    loop = RelayLoop()
    relay = loop.serve(("127.0.0.1", 0), ("127.0.0.1", free_loopback_port()), serving_tls,
                       lambda node: False)
    forwarder = loop.forward(("127.0.0.1", relay.port), head_tls, serving)
    assert round_trip(forwarder.endpoint, b"hello") == b""
    relay.close()
    forwarder.close()


def test_an_insecure_cluster_relays_plain_tcp(echo: EchoServer) -> None:
    loop = RelayLoop()
    relay = loop.serve(("127.0.0.1", 0), ("127.0.0.1", echo.port), None, lambda node: False)
    forwarder = loop.forward(("127.0.0.1", relay.port), None, None)
    assert round_trip(forwarder.endpoint, b"hello") == b"hello"
    relay.close()
    forwarder.close()
