"""The fetch step with the real worker loop, fake runners and a stand-in hub."""

from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from skulk.models.catalog import ModelCatalog
from skulk.models.store.manifest import StoreEntry
from skulk.models.store.pull import PullRequest
from skulk.shared.types.commands import DeleteInstance
from skulk.shared.types.events import InstanceCreated, WeightsReady
from skulk.shared.types.ids import ModelId
from skulk.shared.types.model_cards import ModelCard, ModelFormat, ModelSource
from skulk.shared.types.runners import RunnerFailed
from skulk.testing import factories as f
from skulk.testing.fake_hub import FakeHub
from skulk.testing.models import bundled_gguf
from skulk.worker.weight_sources import HubSource, WeightSource
from skulk.worker.weights_fetch import WeightsFetcher
from skulk.worker.wiring import WorkerReach
from skulk.worker.worker import Worker
from skulk.worker.worker_test import Cluster, FakeSupervisor

MODEL = ModelId("pulled-smol")
REPO = "someone/SmolLM2-135M-Instruct-GGUF"


def _card() -> ModelCard:
    gguf = bundled_gguf()
    return ModelCard(
        model_id=MODEL, family="llama", n_layers=30, hidden_size=576, num_attention_heads=9,
        num_key_value_heads=3, context_length=8192, capabilities=["text", "chat"],
        sources=[ModelSource(format="gguf", filename=f"{MODEL}-gguf-q4_1/{gguf.name}",
                             size_bytes=gguf.stat().st_size)],
        chat_template_source="gguf")


@pytest.fixture
def hub(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeHub]:
    with FakeHub() as fake:
        fake.add_file(REPO, bundled_gguf().name, bundled_gguf())
        monkeypatch.setenv("HF_ENDPOINT", fake.endpoint)
        yield fake


@pytest.fixture(autouse=True)
def reset_fakes() -> None:
    FakeSupervisor.created = []
    FakeSupervisor.crash = False

HUB = HubSource(PullRequest(REPO, MODEL, "gguf"))


class BrokenSource:
    """A source with a bug of its own: it raises what no fetch expects."""

    label = "broken"

    def fetch(self, models_dir: Path, progress: object) -> StoreEntry:
        raise KeyError("a bug")


def _worker(cluster: Cluster, models_dir: Path, sources: list[WeightSource]) -> Worker:
    def sources_for(card: ModelCard, format: ModelFormat,
                    layers: tuple[int, int] | None) -> list[WeightSource]:
        return sources
    return Worker(node_id=f.NODE, replica=cluster.replica,
                  catalog=ModelCatalog([_card()], models_dir),
                  outbox=cluster.outbox(), supervisor_factory=FakeSupervisor,
                  reach=WorkerReach(weight_sources=sources_for))


@pytest.mark.anyio
async def test_a_rank_without_its_weights_fetches_them_then_starts_its_runner(
        hub: FakeHub, tmp_path: Path) -> None:
    cluster = Cluster()
    seen: list[object] = []
    publish = cluster.publish_event

    async def recording(event: object) -> None:
        seen.append(event)
        await publish(event)  # type: ignore[arg-type]

    cluster.publish_event = recording  # type: ignore[method-assign]
    placed = f.instance().model_copy(update={"model_id": MODEL})
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(_worker(cluster, tmp_path, [HUB]).run)
        cluster.apply(InstanceCreated(instance=placed))
        with anyio.fail_after(30):
            while not FakeSupervisor.created:
                await anyio.sleep(0.02)
        tasks.cancel_scope.cancel()
    [ready] = [e for e in seen if isinstance(e, WeightsReady)]
    assert ready.source == f"hub {REPO}" and ready.total_bytes == bundled_gguf().stat().st_size
    [runner] = FakeSupervisor.created
    loaded = Path(runner.kwargs["config"].model_path)
    assert loaded == tmp_path / f"{MODEL}-gguf-q4_1" / bundled_gguf().name
    assert loaded.stat().st_size == bundled_gguf().stat().st_size


@pytest.mark.anyio
async def test_when_no_source_has_the_weights_the_instance_is_given_up_saying_why(
        hub: FakeHub, tmp_path: Path) -> None:
    hub.down = True
    cluster = Cluster()
    placed = f.instance().model_copy(update={"model_id": MODEL})
    async with anyio.create_task_group() as tasks:
        # A source's own bug is one more failed source, not the end of the worker.
        tasks.start_soon(_worker(cluster, tmp_path, [BrokenSource(), HUB]).run)
        cluster.apply(InstanceCreated(instance=placed))
        with anyio.fail_after(60):
            while not cluster.commands:
                await anyio.sleep(0.02)
        tasks.cancel_scope.cancel()
    [command] = cluster.commands
    assert isinstance(command, DeleteInstance)
    [runner_id] = f.instance().shards
    status = cluster.replica.state.runners[runner_id]
    assert isinstance(status, RunnerFailed)
    assert status.error.startswith(f"could not fetch {MODEL} (gguf): broken: KeyError: "
                                   f"'a bug'; hub {REPO}: cannot list"), status.error
    assert not FakeSupervisor.created


@pytest.mark.anyio
async def test_missing_is_computed_again_only_after_what_it_depends_on_changed(
        hub: FakeHub, tmp_path: Path) -> None:
    async def publish(event: object) -> None:
        pass

    fetcher = WeightsFetcher(node_id=f.NODE, catalog=ModelCatalog([_card()], tmp_path),
                             publish_event=publish, sources_for=lambda *_: [HUB])
    placed = f.instance().model_copy(update={"model_id": MODEL})
    [runner_id] = placed.shards
    state = f.state_with(InstanceCreated(instance=placed))
    first = fetcher.missing(state, set())
    assert first == {runner_id}
    assert fetcher.missing(state, set()) is first  # nothing changed: the same answer
    assert fetcher.missing(state, {placed.instance_id}) == frozenset()
    assert fetcher.missing(f.state_with(), set()) == frozenset()
    assert fetcher.missing(state, set()) == {runner_id}

    await fetcher.fetch(placed, runner_id)
    assert fetcher.missing(state, set()) == frozenset()  # the weights are here now
