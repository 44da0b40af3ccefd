"""A pipeline stage's copy from a peer: only the files holding its layers cross the link."""

import hashlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from skulk.models.peers.conftest import Member
from skulk.models.peers.holders import PeerHolding
from skulk.models.peers.server import WeightServer
from skulk.models.peers.source import PeerDisagrees, PeerSource
from skulk.models.store.layer_files import INDEX_FILE
from skulk.models.store.manifest import StoredFile, StoreEntry, read_entry, write_entry
from skulk.shared.types.ids import ModelId
from skulk.shared.types.telemetry import HeldFile, HeldModel
from skulk.testing.sharded_llama import shard_name, write_sharded_llama
from skulk.worker.weights_digest import files_digest

FIRST, MIDDLE, LAST = (shard_name(i, 3) for i in range(3))


def _stored(models_dir: Path, directory: str) -> StoreEntry:
    """The sharded tiny Llama as a whole store entry of `directory`."""
    root = write_sharded_llama(models_dir / directory)
    files = [StoredFile(name=p.name, size_bytes=p.stat().st_size,
                        sha256=hashlib.sha256(p.read_bytes()).hexdigest())
             for p in sorted(root.iterdir())]
    entry = StoreEntry(directory=directory, model_id=ModelId("tiny"), format="mlx",
                       files=files)
    write_entry(root, entry)
    return entry


def _held(entry: StoreEntry) -> HeldModel:
    return HeldModel(model_id=entry.model_id, format=entry.format, directory=entry.directory,
                     layers=entry.layers,
                     files=[HeldFile(name=f.name, size_bytes=f.size_bytes, sha256=f.sha256)
                            for f in entry.files])


@pytest.fixture
def serving(tmp_path: Path, cluster: tuple[Member, Member]
            ) -> Iterator[tuple[StoreEntry, PeerHolding, Member]]:
    server_member, client_member = cluster
    models_dir = tmp_path / "server" / "models"
    whole = _stored(models_dir, "tiny-mlx")
    with WeightServer(models_dir, tls=server_member.tls, host="127.0.0.1") as server:
        yield whole, PeerHolding(server_member.node_id, _held(whole),
                                 (f"https://127.0.0.1:{server.port}",)), client_member


def test_a_stage_copies_only_its_layers_files_from_a_whole_holder(
        serving: tuple[StoreEntry, PeerHolding, Member], tmp_path: Path) -> None:
    whole, holding, client = serving
    models_dir = tmp_path / "client" / "models"
    seen: list[tuple[int, int]] = []
    entry = PeerSource(holding, client.tls, layers=(0, 2)).fetch(
        models_dir, lambda done, total: seen.append((done, total)))

    target = models_dir / "tiny-mlx-layers-0-2"
    assert read_entry(target) == entry and entry.layers == (0, 2)
    assert sorted(p.name for p in target.iterdir() if p.name != ".skulk-store.json") == \
        sorted(["config.json", INDEX_FILE, FIRST, LAST])
    copied = sum(f.size_bytes for f in entry.files)
    assert seen[-1] == (copied, copied)
    assert copied < whole.size_bytes
    assert entry.model_files == whole.files
    # Ranks holding the whole model and ranks holding their stage agree.
    assert files_digest(entry) == files_digest(whole)

    # The stage copy now serves a stage inside it, from this node to the next.
    again = PeerSource(holding, client.tls, layers=(0, 2)).fetch(
        models_dir, lambda done, total: pytest.fail("nothing should be copied again"))
    assert again == entry


def test_a_holder_whose_stage_copy_lacks_the_files_is_refused(
        serving: tuple[StoreEntry, PeerHolding, Member], tmp_path: Path) -> None:
    whole, holding, client = serving
    narrowed = holding.held.model_copy(update={
        "files": [f for f in holding.held.files if f.name != MIDDLE]})
    # The peer's telemetry and manifest agree (it holds a copy without the middle file)...
    server_root = tmp_path / "server" / "models" / "tiny-mlx"
    write_entry(server_root, whole.model_copy(update={
        "files": [f for f in whole.files if f.name != MIDDLE], "layers": (0, 2)}))
    lacking = PeerSource(PeerHolding(holding.node_id, narrowed, holding.base_urls),
                         client.tls, layers=(2, 4))
    # ...but layers 2-4 live in the middle file.
    with pytest.raises(PeerDisagrees, match=MIDDLE):
        lacking.fetch(tmp_path / "client" / "models", lambda done, total: None)


def test_a_stage_copy_serves_a_stage_inside_it_to_the_next_node(
        serving: tuple[StoreEntry, PeerHolding, Member], cluster: tuple[Member, Member],
        tmp_path: Path) -> None:
    whole, holding, client = serving
    server_member = cluster[0]
    relay_dir = tmp_path / "client" / "models"
    relayed = PeerSource(holding, client.tls, layers=(0, 4)).fetch(
        relay_dir, lambda done, total: None)
    with WeightServer(relay_dir, tls=client.tls, host="127.0.0.1") as relay:
        from_stage = PeerHolding(client.node_id, _held(relayed),
                                 (f"https://127.0.0.1:{relay.port}",))
        entry = PeerSource(from_stage, server_member.tls, layers=(0, 2)).fetch(
            tmp_path / "third" / "models", lambda done, total: None)

    assert entry.layers == (0, 2) and entry.directory == "tiny-mlx-layers-0-2"
    assert sorted(f.name for f in entry.files) == sorted(["config.json", INDEX_FILE, FIRST,
                                                          LAST])
    assert entry.model_files == whole.files
    assert files_digest(entry) == files_digest(whole)
