from collections.abc import Iterator
from pathlib import Path

import pytest

from skulk.models.peers.client import PeerUnavailable
from skulk.models.peers.conftest import ENTRY_DIR, Member, Store
from skulk.models.peers.holders import PeerHolding
from skulk.models.peers.server import WeightServer
from skulk.models.peers.source import PeerDisagrees, PeerSource
from skulk.models.store.manifest import read_entry
from skulk.models.store.pull import PARTIAL_DIR
from skulk.shared.types.telemetry import HeldFile, HeldModel
from skulk.worker.weight_sources import WeightSource


def held(store: Store) -> HeldModel:
    return HeldModel(model_id=store.entry.model_id, format=store.entry.format,
                     directory=store.entry.directory,
                     files=[HeldFile(name=f.name, size_bytes=f.size_bytes, sha256=f.sha256)
                            for f in store.entry.files])


@pytest.fixture
def source(store: Store, cluster: tuple[Member, Member]) -> Iterator[PeerSource]:
    server_member, client_member = cluster
    with WeightServer(store.models_dir, tls=server_member.tls, host="127.0.0.1") as server:
        # The first address answers nothing: the source moves on to the next.
        urls = (f"https://127.0.0.1:{server.port + 1 if server.port < 65535 else 1}",
                f"https://127.0.0.1:{server.port}")
        yield PeerSource(PeerHolding(server_member.node_id, held(store), urls),
                         tls=client_member.tls)


def test_a_peer_source_fills_the_store_like_a_pull(store: Store, source: PeerSource,
                                                   tmp_path: Path) -> None:
    as_protocol: WeightSource = source
    models_dir = tmp_path / "client-models"
    staging = models_dir / PARTIAL_DIR / ENTRY_DIR
    staging.mkdir(parents=True)
    (staging / "model.gguf.part").write_bytes(store.contents["model.gguf"][:1000])
    seen: list[tuple[int, int]] = []
    entry = as_protocol.fetch(models_dir, lambda done, total: seen.append((done, total)))
    assert entry == store.entry
    assert read_entry(models_dir / ENTRY_DIR) == store.entry
    for name, data in store.contents.items():
        assert (models_dir / ENTRY_DIR / name).read_bytes() == data
    total = sum(len(d) for d in store.contents.values())
    assert seen[-1] == (total, total) and seen[0][0] == 0
    assert all(a[0] <= b[0] for a, b in zip(seen, seen[1:], strict=False))
    assert not staging.exists()
    assert source.label.startswith("peer node-")
    again: list[tuple[int, int]] = []
    assert source.fetch(models_dir, lambda done, total: again.append((done, total))) == entry
    assert again == []  # already held: nothing crosses the link


def test_a_peer_whose_manifest_differs_from_its_telemetry_is_refused(
        store: Store, source: PeerSource, tmp_path: Path) -> None:
    advertised = source.holding.held.model_copy(update={"files": source.holding.held.files[:1]})
    lying = PeerSource(PeerHolding(source.holding.node_id, advertised,
                                   source.holding.base_urls), tls=source.tls)
    with pytest.raises(PeerDisagrees):
        lying.fetch(tmp_path / "client-models", lambda done, total: None)


def test_a_peer_reachable_on_no_address_is_unavailable(source: PeerSource,
                                                       tmp_path: Path) -> None:
    gone = PeerSource(PeerHolding(source.holding.node_id, source.holding.held,
                                  source.holding.base_urls[:1]), tls=source.tls)
    with pytest.raises(PeerUnavailable, match="none of its addresses"):
        gone.fetch(tmp_path / "client-models", lambda done, total: None)
