"""A pipeline rank of a split MLX instance fetches and loads only its layers' files, with
the real worker loop, fake runners and the stand-in hub serving a sharded checkpoint."""

from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from skulk.models.catalog import ModelCatalog
from skulk.models.store.layer_files import INDEX_FILE
from skulk.models.store.manifest import read_entry
from skulk.shared.types.events import InstanceCreated, WeightsReady
from skulk.shared.types.ids import InstanceId, ModelId, NodeId, RunnerId
from skulk.shared.types.instances import Instance, ShardAssignment, Sharding
from skulk.shared.types.model_cards import EngineName, ModelCard, ModelFormat, ModelSource
from skulk.testing import factories as f
from skulk.testing.fake_hub import FakeHub
from skulk.testing.sharded_llama import shard_name, write_sharded_llama
from skulk.worker.weight_sources import WeightSource, hub_sources
from skulk.worker.weights_digest import files_digest
from skulk.worker.weights_fetch import stage_layers
from skulk.worker.wiring import WorkerReach
from skulk.worker.worker import Worker
from skulk.worker.worker_test import Cluster, FakeSupervisor

MODEL = ModelId("tiny-staged")
REPO = "someone/tiny-staged-mlx"
FIRST, MIDDLE, LAST = (shard_name(i, 3) for i in range(3))
HERE, THERE = RunnerId("run-here"), RunnerId("run-there")


def _split(sharding: Sharding = "pipeline", engine: EngineName = "mlx") -> Instance:
    first, second = ((0, 2), (2, 6)) if sharding == "pipeline" else ((0, 6), (0, 6))
    return Instance(
        instance_id=InstanceId("inst-staged"), model_id=MODEL, engine=engine,
        sharding=sharding, context_token_limit=512,
        shards={HERE: ShardAssignment(node_id=f.NODE, rank=0, world_size=2,
                                      start_layer=first[0], end_layer=first[1]),
                THERE: ShardAssignment(node_id=NodeId("node-elsewhere"), rank=1,
                                       world_size=2, start_layer=second[0],
                                       end_layer=second[1])})


def _card() -> ModelCard:
    return ModelCard(
        model_id=MODEL, family="llama", n_layers=6, hidden_size=64, num_attention_heads=4,
        num_key_value_heads=2, context_length=2048, capabilities=["text"],
        chat_template_source="tokenizer_config",
        sources=[ModelSource(format="mlx", filename=f"{MODEL}-mlx", size_bytes=1, repo=REPO)])


def test_only_a_pipeline_rank_of_a_split_mlx_instance_loads_a_stage() -> None:
    assert stage_layers(_split(), _split().shards[HERE]) == (0, 2)
    assert stage_layers(_split(), _split().shards[THERE]) == (2, 6)
    tensor = _split("tensor")
    assert stage_layers(tensor, tensor.shards[HERE]) is None
    gguf = _split(engine="llama_cpp")
    assert stage_layers(gguf, gguf.shards[HERE]) is None
    whole = f.instance().model_copy(update={"engine": "mlx"})
    assert stage_layers(whole, next(iter(whole.shards.values()))) is None


@pytest.fixture
def hub(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[FakeHub]:
    with FakeHub() as fake:
        monkeypatch.setenv("HF_ENDPOINT", fake.endpoint)
        monkeypatch.setenv("HF_HUB_DISABLE_XET", "1")
        fake.add_directory(REPO, write_sharded_llama(tmp_path / "published"))
        yield fake


@pytest.fixture(autouse=True)
def reset_fakes() -> None:
    FakeSupervisor.created = []
    FakeSupervisor.crash = False


async def _place(instance: Instance, models_dir: Path) -> list[object]:
    """Run a worker until it creates its runner for `instance`; the events it published."""
    cluster = Cluster()
    seen: list[object] = []
    publish = cluster.publish_event

    async def recording(event: object) -> None:
        seen.append(event)
        await publish(event)  # type: ignore[arg-type]

    def sources_for(card: ModelCard, format: ModelFormat,
                    layers: tuple[int, int] | None) -> list[WeightSource]:
        return hub_sources(card, format, layers)

    cluster.publish_event = recording  # type: ignore[method-assign]
    worker = Worker(node_id=f.NODE, replica=cluster.replica,
                    catalog=ModelCatalog([_card()], models_dir),
                    outbox=cluster.outbox(), supervisor_factory=FakeSupervisor,
                    reach=WorkerReach(weight_sources=sources_for))
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(worker.run)
        cluster.apply(InstanceCreated(instance=instance))
        with anyio.fail_after(30):
            while not FakeSupervisor.created:
                await anyio.sleep(0.02)
        tasks.cancel_scope.cancel()
    return seen


def _fetched(hub: FakeHub) -> set[str]:
    return {path.rsplit("/", 1)[-1] for method, path, _ in hub.requests
            if method == "GET" and "/resolve/" in path}


@pytest.mark.anyio
async def test_a_pipeline_rank_fetches_only_its_layers_files_and_loads_its_stage_copy(
        hub: FakeHub, tmp_path: Path) -> None:
    models = tmp_path / "models"
    seen = await _place(_split(), models)

    assert _fetched(hub) == {"config.json", INDEX_FILE, FIRST, LAST}
    [runner] = FakeSupervisor.created
    config = runner.kwargs["config"]
    stage_dir = models / f"{MODEL}-mlx-layers-0-2"
    assert Path(config.model_path) == stage_dir
    entry = read_entry(stage_dir)
    assert entry is not None and entry.layers == (0, 2)
    # The ranks compare the whole model's digest, whichever part each holds.
    assert config.options.weights_sha256 == files_digest(entry)
    [ready] = [e for e in seen if isinstance(e, WeightsReady)]
    assert ready.files_sha256 == files_digest(entry)
    assert ready.total_bytes == entry.size_bytes


@pytest.mark.anyio
async def test_a_tensor_parallel_rank_fetches_the_whole_model(
        hub: FakeHub, tmp_path: Path) -> None:
    models = tmp_path / "models"
    await _place(_split("tensor"), models)

    assert _fetched(hub) == {"config.json", INDEX_FILE, FIRST, MIDDLE, LAST}
    [runner] = FakeSupervisor.created
    assert Path(runner.kwargs["config"].model_path) == models / f"{MODEL}-mlx"
