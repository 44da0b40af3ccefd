"""The device relays (skulk._native, driven as the node drives them): bytes cross between
members only, a revocation ends the links already open, and a link whose far end is not
there is never passed on."""

import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import anyio
import pytest

from skulk.node_identity import load_or_create_identity
from skulk.shared.types.ids import NodeId
from skulk.testing.cluster_trust import make_member
from skulk.trust.files import TlsFiles, TrustFiles
from skulk.worker.rpc_relay import READY, forward, free_loopback_port, serve


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
            try:
                data = connection.recv(65536)
            except ConnectionResetError:  # ended before it read what we sent
                break
            if not data:
                break
            received += data
        return received


def test_a_member_reaches_the_device_server_through_both_relays(
        tmp_path: Path, echo: EchoServer) -> None:
    serving, serving_tls = member(tmp_path / "ca", tmp_path / "a")
    _head, head_tls = member(tmp_path / "ca", tmp_path / "b")
    relay = serve(("127.0.0.1", 0), ("127.0.0.1", echo.port), serving_tls, frozenset())
    forwarder = forward(("127.0.0.1", relay.port), head_tls, serving)
    payload = bytes(range(256)) * 1000  # several TLS records each way
    assert round_trip(forwarder.endpoint, payload) == payload
    assert round_trip(forwarder.endpoint, b"again") == b"again"
    relay.close()
    forwarder.close()


def test_a_stranger_with_a_certificate_of_another_cluster_is_refused(
        tmp_path: Path, echo: EchoServer) -> None:
    _serving, serving_tls = member(tmp_path / "ca", tmp_path / "a")
    _stranger, stranger_tls = member(tmp_path / "other-ca", tmp_path / "x")
    relay = serve(("127.0.0.1", 0), ("127.0.0.1", echo.port), serving_tls, frozenset())
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
    relay = serve(("127.0.0.1", 0), ("127.0.0.1", echo.port), serving_tls, frozenset())
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
    relay = serve(("127.0.0.1", 0), ("127.0.0.1", echo.port), serving_tls, {head})
    forwarder = forward(("127.0.0.1", relay.port), head_tls, serving)
    assert round_trip(forwarder.endpoint, b"hello") == b""
    assert relay.refused == 1 and echo.accepted == 0
    relay.close()
    forwarder.close()


def test_a_forwarder_to_a_relay_whose_server_is_gone_closes_the_link(tmp_path: Path) -> None:
    serving, serving_tls = member(tmp_path / "ca", tmp_path / "a")
    _head, head_tls = member(tmp_path / "ca", tmp_path / "b")
    relay = serve(("127.0.0.1", 0), ("127.0.0.1", free_loopback_port()), serving_tls, frozenset())
    forwarder = forward(("127.0.0.1", relay.port), head_tls, serving)
    assert round_trip(forwarder.endpoint, b"hello") == b""
    relay.close()
    forwarder.close()


def test_an_insecure_cluster_relays_plain_tcp(echo: EchoServer) -> None:
    relay = serve(("127.0.0.1", 0), ("127.0.0.1", echo.port), None, frozenset())
    forwarder = forward(("127.0.0.1", relay.port), None, None)
    assert round_trip(forwarder.endpoint, b"hello") == b"hello"
    relay.close()
    forwarder.close()


def wait_until(condition: Callable[[], bool], seconds: float = 5.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "not within 5 s"
        time.sleep(0.02)


def test_a_revocation_ends_a_members_open_link_and_refuses_it_after(
        tmp_path: Path, echo: EchoServer) -> None:
    serving, serving_tls = member(tmp_path / "ca", tmp_path / "a")
    head, head_tls = member(tmp_path / "ca", tmp_path / "b")
    other, _ = member(tmp_path / "ca", tmp_path / "c")
    relay = serve(("127.0.0.1", 0), ("127.0.0.1", echo.port), serving_tls, frozenset())
    forwarder = forward(("127.0.0.1", relay.port), head_tls, serving)
    with socket.create_connection(("127.0.0.1", forwarder.port), timeout=5) as link:
        link.sendall(b"open")
        assert link.recv(64) == b"open"
        assert relay.revoke({other}) == 0, "a revocation of another node ends nothing"
        link.sendall(b"still")
        assert link.recv(64) == b"still"
        assert relay.revoke({other, head}) == 1
        assert link.recv(64) == b"", "the revoked member's open link ends at once"
    wait_until(lambda: relay.open_links == 0 and forwarder.open_links == 0)
    assert round_trip(forwarder.endpoint, b"hello") == b""
    assert relay.refused == 1 and echo.accepted == 1
    relay.close()
    forwarder.close()


def test_a_forwarder_ends_its_links_to_a_relay_whose_node_is_revoked(
        tmp_path: Path, echo: EchoServer) -> None:
    serving, serving_tls = member(tmp_path / "ca", tmp_path / "a")
    _head, head_tls = member(tmp_path / "ca", tmp_path / "b")
    relay = serve(("127.0.0.1", 0), ("127.0.0.1", echo.port), serving_tls, frozenset())
    forwarder = forward(("127.0.0.1", relay.port), head_tls, serving)
    with socket.create_connection(("127.0.0.1", forwarder.port), timeout=5) as link:
        link.sendall(b"open")
        assert link.recv(64) == b"open"
        assert forwarder.revoke({serving}) == 1
        assert link.recv(64) == b""
    assert round_trip(forwarder.endpoint, b"hello") == b""
    assert forwarder.refused == 1
    relay.close()
    forwarder.close()


def test_a_forwarder_refuses_a_relay_whose_certificate_names_another_node(
        tmp_path: Path, echo: EchoServer) -> None:
    _serving, serving_tls = member(tmp_path / "ca", tmp_path / "a")
    _head, head_tls = member(tmp_path / "ca", tmp_path / "b")
    placed, _ = member(tmp_path / "ca", tmp_path / "c")  # where the master placed the rank
    relay = serve(("127.0.0.1", 0), ("127.0.0.1", echo.port), serving_tls, frozenset())
    forwarder = forward(("127.0.0.1", relay.port), head_tls, placed)
    assert round_trip(forwarder.endpoint, b"hello") == b""
    assert echo.accepted == 0
    relay.close()
    forwarder.close()


def test_closing_a_relay_frees_its_port_and_ends_its_links(echo: EchoServer) -> None:
    relay = serve(("127.0.0.1", 0), ("127.0.0.1", echo.port), None, frozenset())
    forwarder = forward(("127.0.0.1", relay.port), None, None)
    with socket.create_connection(("127.0.0.1", forwarder.port), timeout=5) as link:
        link.sendall(b"open")
        assert link.recv(64) == b"open"
        forwarder.close()
        assert link.recv(64) == b""
    relay.close()
    with socket.create_server(("127.0.0.1", relay.port)):
        pass  # the port is free again
