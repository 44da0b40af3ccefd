"""The weights endpoint over real sockets: TLS with the cluster's certificates."""

import ssl
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from skulk.models.peers.client import PeerUnavailable, fetch_from_peer, fetch_manifest
from skulk.models.peers.conftest import ENTRY_DIR, Member, Store, member_of
from skulk.models.peers.server import WeightServer
from skulk.models.peers.tls import client_context
from skulk.models.store.pull import CorruptFile
from skulk.shared.types.ids import NodeId
from skulk.trust.files import TlsFiles


@pytest.fixture
def served(store: Store, cluster: tuple[Member, Member]) -> Iterator[str]:
    server_member, _ = cluster
    with WeightServer(store.models_dir, tls=server_member.tls, host="127.0.0.1") as server:
        yield f"https://127.0.0.1:{server.port}"


def test_a_member_downloads_a_range_and_the_headers_say_what_it_is(
        store: Store, cluster: tuple[Member, Member], served: str) -> None:
    server_member, client_member = cluster
    context = client_context(client_member.tls, check_node=True)
    with httpx.Client(verify=context) as client:
        response = client.get(f"{served}/weights/{ENTRY_DIR}/model.gguf",
                              headers={"Range": "bytes=10-19"},
                              extensions={"sni_hostname": server_member.node_id})
        head = client.head(f"{served}/weights/{ENTRY_DIR}/model.gguf",
                           extensions={"sni_hostname": server_member.node_id})
        missing = client.get(f"{served}/weights/{ENTRY_DIR}/.skulk-store.json",
                             extensions={"sni_hostname": server_member.node_id})
    size = len(store.contents["model.gguf"])
    assert response.status_code == 206
    assert response.content == store.contents["model.gguf"][10:20]
    assert response.headers["Content-Range"] == f"bytes 10-19/{size}"
    assert response.headers["ETag"] == f'"{store.entry.files[0].sha256}"'
    assert head.status_code == 200 and head.headers["Content-Length"] == str(size)
    assert head.content == b""
    assert missing.status_code == 404


def test_a_download_resumes_from_its_part_and_is_verified(
        store: Store, cluster: tuple[Member, Member], served: str, tmp_path: Path) -> None:
    server_member, client_member = cluster
    target = tmp_path / "fetched"
    data = store.contents["model.gguf"]
    target.mkdir()
    (target / "model.gguf.part").write_bytes(data[:12345])
    received: list[int] = []
    path = fetch_from_peer(served, client_member.tls, ENTRY_DIR, store.entry.files[0], target,
                           received.append, peer_node=server_member.node_id)
    assert path.read_bytes() == data
    assert sum(received) == len(data) - 12345  # only the rest crossed the link
    assert not (target / "model.gguf.part").exists()
    nested = fetch_from_peer(served, client_member.tls, ENTRY_DIR, store.entry.files[1],
                             target, received.append)
    assert nested == target / "sub" / "tokenizer.json" and nested.read_bytes() == b"{}"
    assert fetch_manifest(served, client_member.tls, ENTRY_DIR) == store.entry


def test_a_corrupt_byte_on_the_server_is_refused_by_the_client(
        store: Store, cluster: tuple[Member, Member], served: str, tmp_path: Path) -> None:
    _, client_member = cluster
    on_disk = store.models_dir / ENTRY_DIR / "model.gguf"
    damaged = bytearray(on_disk.read_bytes())
    damaged[1000] ^= 0xFF
    on_disk.write_bytes(bytes(damaged))
    target = tmp_path / "fetched"
    with pytest.raises(CorruptFile, match="sha256"):
        fetch_from_peer(served, client_member.tls, ENTRY_DIR, store.entry.files[0],
                        target, lambda size: None)
    assert list(target.iterdir()) == []


def test_a_server_that_is_not_the_node_asked_for_is_refused(
        store: Store, cluster: tuple[Member, Member], served: str, tmp_path: Path) -> None:
    _, client_member = cluster
    with pytest.raises(PeerUnavailable, match="(?i)certificate|hostname"):
        fetch_from_peer(served, client_member.tls, ENTRY_DIR, store.entry.files[1], tmp_path,
                        lambda size: None, peer_node=NodeId("node-someoneelse"))


def _stranger_context(tmp_path: Path, trusted_ca: Path) -> ssl.SSLContext:
    """A client with a certificate from another cluster's CA, which knows ours (CA
    certificates are not secret): only the server's check can keep it out."""
    stranger = member_of(tmp_path / "other-authority", tmp_path / "stranger").tls
    return client_context(TlsFiles(ca_certificate=trusted_ca, certificate=stranger.certificate,
                                   private_key=stranger.private_key), check_node=False)


def test_a_client_certificate_from_another_authority_is_refused_at_the_handshake(
        cluster: tuple[Member, Member], served: str, tmp_path: Path) -> None:
    server_member, _ = cluster
    context = _stranger_context(tmp_path, server_member.tls.ca_certificate)
    with httpx.Client(verify=context) as client, pytest.raises(httpx.TransportError):
        client.get(f"{served}/weights/{ENTRY_DIR}/model.gguf")


def test_a_client_without_a_certificate_is_refused(
        cluster: tuple[Member, Member], served: str) -> None:
    server_member, _ = cluster
    context = ssl.create_default_context(cafile=str(server_member.tls.ca_certificate))
    context.check_hostname = False
    with httpx.Client(verify=context) as client, pytest.raises(httpx.TransportError):
        client.get(f"{served}/weights/{ENTRY_DIR}/model.gguf")


def test_a_revoked_member_is_refused(store: Store, cluster: tuple[Member, Member],
                                     tmp_path: Path) -> None:
    server_member, client_member = cluster
    with WeightServer(store.models_dir, tls=server_member.tls, host="127.0.0.1",
                      is_revoked=lambda node: node == client_member.node_id) as server:
        with pytest.raises(PeerUnavailable, match="403.*expelled"):
            fetch_from_peer(f"https://127.0.0.1:{server.port}", client_member.tls, ENTRY_DIR,
                            store.entry.files[1], tmp_path, lambda size: None)


def test_an_insecure_cluster_serves_plain_http(store: Store, tmp_path: Path) -> None:
    with WeightServer(store.models_dir, tls=None, host="127.0.0.1") as server:
        path = fetch_from_peer(f"http://127.0.0.1:{server.port}", None, ENTRY_DIR,
                               store.entry.files[0], tmp_path, lambda size: None)
    assert path.read_bytes() == store.contents["model.gguf"]


@pytest.mark.parametrize("secure", [False, True])
def test_connections_beyond_the_bound_are_closed_and_stop_ends_open_ones(
        store: Store, cluster: tuple[Member, Member], secure: bool) -> None:
    server_member, client_member = cluster
    server = WeightServer(store.models_dir, tls=server_member.tls if secure else None,
                          host="127.0.0.1", max_connections=1)
    server.start()
    url = f"{server.scheme}://127.0.0.1:{server.port}/weights/{ENTRY_DIR}/model.gguf"
    verify = client_context(client_member.tls, check_node=False) if secure else False
    with httpx.Client(verify=verify) as holder, httpx.Client(verify=verify) as second:
        assert holder.get(url).status_code == 200  # keeps its connection open
        with pytest.raises(httpx.TransportError):
            second.get(url)
        assert server.refused_busy == 1
        server.stop()  # returns although `holder` still holds its connection
        with pytest.raises(httpx.TransportError):
            holder.get(url)


def test_a_range_past_the_end_is_answered_416_with_the_size(store: Store) -> None:
    with WeightServer(store.models_dir, tls=None, host="127.0.0.1") as server:
        response = httpx.get(f"http://127.0.0.1:{server.port}/weights/{ENTRY_DIR}/"
                             "sub/tokenizer.json", headers={"Range": "bytes=2-"})
    assert response.status_code == 416
    assert response.headers["Content-Range"] == "bytes */2"


def test_a_peer_that_ignores_the_range_restarts_the_part(
        store: Store, tmp_path: Path) -> None:
    # A part longer than the file cannot be resumed: it is dropped and fetched whole.
    (tmp_path / "model.gguf.part").write_bytes(b"x" * (len(store.contents["model.gguf"]) + 1))
    with WeightServer(store.models_dir, tls=None, host="127.0.0.1") as server:
        path = fetch_from_peer(f"http://127.0.0.1:{server.port}", None, ENTRY_DIR,
                               store.entry.files[0], tmp_path, lambda size: None)
    assert path.read_bytes() == store.contents["model.gguf"]
