"""The worker's fetch step: the weights of a rank placed on a node that lacks them.

Sources are tried in order (`weight_sources.py`): peers holding the same files, nearest
first, then the hub. The copy runs in a thread; its progress goes out as
`WeightsFetchProgress` at most twice a second and its end as `WeightsReady`. Every file
is checked against its sha256 before the store lists it, so a runner never loads
unverified bytes. The plan loop never waits on a fetch: `fetching` tells `plan()` which
ranks are under way.

A rank of a pipeline split of an engine that stores stage copies (its description's
`stage_copies`: MLX) needs only its layers: it loads a whole copy when the store has one,
else a stage copy covering its layers, and fetches a stage copy (`stage_layers`).
Tensor-parallel ranks and whole instances need the whole model.
"""

from collections.abc import Awaitable, Callable, Mapping, Set
from pathlib import Path

import anyio
from loguru import logger

from skulk.models.catalog import ModelCatalog
from skulk.models.store.card_hub import hub_source
from skulk.models.store.layer_files import Layers
from skulk.models.store.manifest import StoreEntry
from skulk.shared.types.events import Event, WeightsFetchProgress, WeightsReady
from skulk.shared.types.ids import InstanceId, NodeId, RunnerId
from skulk.shared.types.instances import Instance, ShardAssignment
from skulk.shared.types.model_cards import ModelCard, ModelFormat
from skulk.shared.types.state import State
from skulk.worker.engines.description import EngineDescription
from skulk.worker.engines.registry import engine_description
from skulk.worker.weight_sources import WeightSource
from skulk.worker.weights_digest import files_digest

PROGRESS_EVERY_SECONDS = 0.5

# (card, format, a pipeline stage's layers or None for the whole model) → sources in order.
SourcesFor = Callable[[ModelCard, ModelFormat, Layers | None], list[WeightSource]]


class NoWeights(RuntimeError):
    """No source could provide the weights; the message says what was tried."""


def stage_layers(instance: Instance, shard: ShardAssignment) -> Layers | None:
    """The layers [start, end) a rank loads when it needs only those files: a rank of a
    pipeline split of an engine that stores stage copies. None: the whole model."""
    if (shard.world_size > 1 and instance.sharding == "pipeline"
            and engine_description(instance.engine).stage_copies):
        return shard.start_layer, shard.end_layer
    return None


def needed_format(catalog: ModelCatalog, card: ModelCard, engine: EngineDescription,
                  layers: Layers | None = None) -> ModelFormat | None:
    """The format to fetch for `engine` to load `card` (a pipeline stage's `layers` of it)
    here, or None when nothing need be fetched (the weights are here, or the engine
    imports them from what is here)."""
    if catalog.stage_path(card, engine.weight_format, layers) is not None:
        return None
    # An engine that imports its weights (from a GGUF) does so only when its own format is
    # not on the hub: a quantized hub copy beats converting a quantized GGUF.
    source = engine.imports_from
    if (source is not None and card.source_for(source) is not None
            and hub_source(card, engine.weight_format) is None):
        return None if catalog.local_path(card, source) is not None else source
    return engine.weight_format if card.source_for(engine.weight_format) else None


async def loadable_weights(catalog: ModelCatalog, card: ModelCard,
                           engine: EngineDescription, layers: Layers | None = None
                           ) -> Path | None:
    """The weights `engine` loads (a stage copy will do for a pipeline stage's `layers`);
    an engine that imports its weights gets them from the node's GGUF on first use (in a
    thread: it takes seconds)."""
    local = catalog.stage_path(card, engine.weight_format, layers)
    source, build = engine.imports_from, engine.import_weights
    if (local is not None or source is None or build is None
            or catalog.local_path(card, source) is None):
        return local
    logger.info("importing {} for {} into the model store", card.model_id, engine.name)
    try:
        imported: Path = await anyio.to_thread.run_sync(build, catalog, card, None)
    except (OSError, ValueError) as error:
        logger.error("could not import {} for {}: {}", card.model_id, engine.name, error)
        return None
    return imported


class WeightsFetcher:
    """Fetches run here, one per rank; the worker asks what is missing and starts them."""

    def __init__(self, *, node_id: NodeId, catalog: ModelCatalog,
                 publish_event: Callable[[Event], Awaitable[None]],
                 sources_for: SourcesFor) -> None:
        self._node_id = node_id
        self._catalog = catalog
        self._publish_event = publish_event
        self._sources_for = sources_for
        self.fetching: set[RunnerId] = set()
        # The last answer of `missing` and what it was computed from: the plan loop asks
        # several times per request, and the instances rarely change in between.
        self._missing: tuple[Mapping[InstanceId, Instance], frozenset[InstanceId], int,
                             frozenset[RunnerId]] | None = None

    def missing(self, state: State, given_up: Set[InstanceId]) -> frozenset[RunnerId]:
        """The ranks here whose weights must be fetched first (two ranks of one pipeline
        on this node may need different layers). Computed again only when the instances,
        the instances given up or the catalogue changed, or a fetch ended."""
        given_up = frozenset(given_up)
        generation = self._catalog.generation
        cached = self._missing
        if (cached is not None and cached[0] is state.instances and cached[1] == given_up
                and cached[2] == generation):
            return cached[3]
        missing = self._compute_missing(state, given_up)
        self._missing = (state.instances, given_up, generation, missing)
        return missing

    def _compute_missing(self, state: State, given_up: Set[InstanceId]
                         ) -> frozenset[RunnerId]:
        missing = set()
        for instance in state.instances.values():
            if instance.instance_id in given_up:
                continue
            card = self._catalog.resolve(instance.model_id)
            runs_model = engine_description(instance.engine).runs_model
            for runner_id, shard in instance.shards.items():
                if not runs_model(shard.rank, shard.world_size):
                    continue  # a device server gets its layers from its head
                if shard.node_id == self._node_id and card is not None and needed_format(
                        self._catalog, card, engine_description(instance.engine),
                        stage_layers(instance, shard)):
                    missing.add(runner_id)
        return frozenset(missing)

    async def fetch(self, instance: Instance, runner_id: RunnerId) -> None:
        """Bring the rank's weights here; raises NoWeights when every source failed."""
        try:
            await self._fetch(instance, runner_id)
        finally:
            self._missing = None  # the files here may have changed, whatever the outcome

    async def _fetch(self, instance: Instance, runner_id: RunnerId) -> None:
        card = self._catalog.resolve(instance.model_id)
        layers = stage_layers(instance, instance.shards[runner_id])
        format = None if card is None else needed_format(
            self._catalog, card, engine_description(instance.engine), layers)
        if card is None or format is None:
            return
        sources = self._sources_for(card, format, layers)
        if not sources:
            raise NoWeights(f"no peer holds the {format} weights of {card.model_id} and its "
                            "card names no hub repository; add them on a node with "
                            "`skulk models add` or `skulk models pull`")
        failures = []
        for source in sources:
            try:
                entry = await self._fetch_from(source, runner_id, card)
            except (OSError, ValueError, RuntimeError) as error:
                logger.warning("fetching {} from {} failed: {}", card.model_id, source.label,
                               error)
                failures.append(f"{source.label}: {error}")
                continue
            except Exception as error:  # a source's own bug: the next source, not a crash
                logger.exception("fetching {} from {} failed unexpectedly", card.model_id,
                                 source.label)
                failures.append(f"{source.label}: {type(error).__name__}: {error}")
                continue
            self._catalog.refresh()
            await self._publish_event(WeightsReady(
                runner_id=runner_id, model_id=card.model_id, total_bytes=entry.size_bytes,
                files_sha256=files_digest(entry), source=source.label))
            return
        raise NoWeights(f"could not fetch {card.model_id} ({format}): " + "; ".join(failures))

    async def _fetch_from(self, source: WeightSource, runner_id: RunnerId,
                          card: ModelCard) -> StoreEntry:
        done_total = [0, 0]

        def progress(done: int, total: int) -> None:
            done_total[:] = [done, total]

        async def report() -> None:
            while True:
                await anyio.sleep(PROGRESS_EVERY_SECONDS)
                done, total = done_total
                await self._publish_event(WeightsFetchProgress(
                    runner_id=runner_id, model_id=card.model_id, done_bytes=done,
                    total_bytes=total, source=source.label))

        logger.info("fetching {} from {}", card.model_id, source.label)
        models_dir: Path = self._catalog.models_dir
        outcome: list[StoreEntry | Exception] = []
        async with anyio.create_task_group() as reporting:
            reporting.start_soon(report)
            try:
                outcome.append(await anyio.to_thread.run_sync(
                    source.fetch, models_dir, progress, abandon_on_cancel=True))
            except Exception as error:
                outcome.append(error)  # raised below: a task group would wrap it
            finally:
                reporting.cancel_scope.cancel()
        if isinstance(outcome[0], Exception):
            raise outcome[0]
        return outcome[0]
