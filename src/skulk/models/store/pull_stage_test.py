"""A pipeline stage's pull from the stand-in hub: only the files holding its layers."""

import json
from collections.abc import Iterator
from pathlib import Path

import mlx.core as mx
import pytest
from mlx.utils import tree_flatten

from skulk.model_families.llama import LlamaQuirks
from skulk.model_families.quirks import PLAIN
from skulk.models.store.layer_files import INDEX_FILE
from skulk.models.store.manifest import read_entry
from skulk.models.store.pull import PullRequest, pull
from skulk.testing.fake_hub import FakeHub
from skulk.testing.random_family import tiny_config, write_random_model
from skulk.testing.sharded_llama import shard_checkpoint, shard_name, write_sharded_llama
from skulk.worker.engines.mlx.families.stage import load_stage
from skulk.worker.engines.mlx.families.stage_spec import stage_spec
from skulk.worker.weights_digest import files_digest

REPO = "someone/tiny-llama-mlx"
FIRST, MIDDLE, LAST = (shard_name(i, 3) for i in range(3))


@pytest.fixture
def hub(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[FakeHub]:
    with FakeHub() as fake:
        monkeypatch.setenv("HF_ENDPOINT", fake.endpoint)
        monkeypatch.setenv("HF_HUB_DISABLE_XET", "1")
        fake.add_directory(REPO, write_sharded_llama(tmp_path / "published"))
        yield fake


def _fetched(hub: FakeHub) -> set[str]:
    return {path.rsplit("/", 1)[-1] for method, path, _ in hub.requests
            if method == "GET" and "/resolve/" in path}


def _stage_parameters(model_dir: Path, rank: int, start: int, end: int
                      ) -> dict[str, mx.array]:
    config = json.loads((model_dir / "config.json").read_text())
    spec = stage_spec(rank=rank, size=2, start_layer=start, end_layer=end, n_layers=6)
    stage = load_stage(model_dir, config, spec, LlamaQuirks())
    return dict(tree_flatten(stage.model.parameters()))


def test_a_stage_pull_fetches_only_its_layers_files_and_loads_as_that_stage(
        hub: FakeHub, tmp_path: Path) -> None:
    models = tmp_path / "models"
    result = pull(models, PullRequest(REPO, model_id="tiny", layers=(0, 2)),
                  lambda done, total: None)

    # Layers 0-1 are in the first file; the final norm is in the last.
    assert _fetched(hub) == {"config.json", INDEX_FILE, FIRST, LAST}
    assert result.fetched and result.path == models / "tiny-mlx-layers-0-2"
    entry = result.entry
    assert entry.layers == (0, 2) and read_entry(result.path) == entry
    assert sorted(f.name for f in entry.files) == sorted(["config.json", INDEX_FILE, FIRST,
                                                          LAST])
    assert entry.model_files is not None
    assert [f.name for f in entry.model_files] == sorted(
        ["config.json", INDEX_FILE, FIRST, MIDDLE, LAST])
    published = tmp_path / "published"
    assert entry.card is not None
    assert entry.card.sources[0].size_bytes == sum(
        (published / name).stat().st_size for name in (FIRST, MIDDLE, LAST))
    assert not (result.path / MIDDLE).exists()

    stage = _stage_parameters(result.path, 0, 0, 2)
    expected = _stage_parameters(published, 0, 0, 2)
    assert stage.keys() == expected.keys()
    assert all(mx.array_equal(stage[name], expected[name]).item() for name in expected)
    with pytest.raises(ValueError):  # the middle layers are not here
        _stage_parameters(result.path, 1, 2, 6)

    # A rank holding the whole model and one holding this stage agree on the weights.
    whole = pull(tmp_path / "elsewhere", PullRequest(REPO, model_id="tiny"),
                 lambda done, total: None).entry
    assert files_digest(whole) == files_digest(entry)
    assert files_digest(whole.model_copy(update={"files": whole.files[1:]})) != \
        files_digest(entry)


def test_the_last_stage_also_fetches_the_tied_embeddings_file(
        hub: FakeHub, tmp_path: Path) -> None:
    result = pull(tmp_path / "models", PullRequest(REPO, model_id="tiny", layers=(4, 6)),
                  lambda done, total: None)

    assert _fetched(hub) == {"config.json", INDEX_FILE, FIRST, LAST}
    stage = _stage_parameters(result.path, 1, 4, 6)
    expected = _stage_parameters(tmp_path / "published", 1, 4, 6)
    assert all(mx.array_equal(stage[name], expected[name]).item() for name in expected)


def test_a_whole_copy_of_the_same_commit_serves_a_stage_without_fetching(
        hub: FakeHub, tmp_path: Path) -> None:
    models = tmp_path / "models"
    whole = pull(models, PullRequest(REPO, model_id="tiny"), lambda done, total: None)
    assert whole.entry.layers is None and whole.path == models / "tiny-mlx"
    hub.requests.clear()

    stage = pull(models, PullRequest(REPO, model_id="tiny", layers=(2, 4)),
                 lambda done, total: None)

    assert not stage.fetched and stage.path == whole.path and stage.entry.layers is None
    assert not _fetched(hub)


def test_a_stage_of_another_family_pulls_and_loads_the_same(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """An mlx-community style Qwen 3 repository in three files: the last stage skips the
    file of the middle layers (the embedding's file comes too, as for every stage), and
    loads what the whole download loads."""
    published = write_random_model(tmp_path / "qwen", tiny_config("qwen3", n_layers=6),
                                   seed=4)
    shard_checkpoint(published, 3)
    with FakeHub() as fake:
        monkeypatch.setenv("HF_ENDPOINT", fake.endpoint)
        monkeypatch.setenv("HF_HUB_DISABLE_XET", "1")
        fake.add_directory("mlx-community/tiny-qwen3", published)
        result = pull(tmp_path / "models", PullRequest("mlx-community/tiny-qwen3",
                                                       model_id="tiny-qwen3", layers=(4, 6)),
                      lambda done, total: None)
        assert _fetched(fake) == {"config.json", INDEX_FILE, FIRST, LAST}
    assert result.entry.card is not None and result.entry.card.model_type == "qwen3"
    config = json.loads((result.path / "config.json").read_text())
    spec = stage_spec(rank=1, size=2, start_layer=4, end_layer=6, n_layers=6)
    pulled = dict(tree_flatten(load_stage(result.path, config, spec, PLAIN).model.parameters()))
    whole = dict(tree_flatten(load_stage(published, config, spec, PLAIN).model.parameters()))
    assert pulled.keys() == whole.keys() and "lm_head.weight" in pulled
    assert all(mx.array_equal(pulled[name], whole[name]).item() for name in whole)
