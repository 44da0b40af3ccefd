"""The engine options a rank's runner gets from its instance, beyond the card's and the
node's: what every rank of a split instance must agree on."""

from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio
from loguru import logger

from skulk.models.catalog import ModelCatalog
from skulk.shared.types.ids import NodeId
from skulk.shared.types.instances import Instance, ShardAssignment
from skulk.shared.types.model_cards import ModelCard
from skulk.worker.engines.description import EngineDescription
from skulk.worker.engines.options import OptionValues
from skulk.worker.engines.registry import engine_description
from skulk.worker.weights_digest import weights_digest


async def agreement_options(instance: Instance, path: str) -> OptionValues:
    """The digest of the weights a rank of a split instance loads: its ranks check they
    agree before serving (a whole instance has nobody to disagree with, and a head that
    serves the others their layers itself neither)."""
    if len(instance.shards) < 2 or engine_description(instance.engine).head_runs_model:
        return {}
    digest = await anyio.to_thread.run_sync(weights_digest, Path(path))
    return {} if digest is None else {"weights_sha256": digest}


def engine_options(instance: Instance, batching: bool = True) -> OptionValues:
    """What every rank's engine must agree on beyond its own shard: how the model is split
    and where each rank of the ring listens (stamped by the master); and this node's choice
    of batching concurrent requests, for instances wholly on this node only: every rank of
    a split instance must run the same batch shape, whatever each node's flag says."""
    options: OptionValues = {} if batching or len(instance.shards) > 1 else {"batching": False}
    if instance.ring_port is None:
        return options
    ranks = sorted(instance.shards.values(), key=lambda s: s.rank)
    hosts = [f"{shard.ring_host or '127.0.0.1'}:{instance.ring_port + shard.rank}"
             for shard in ranks]
    return {**options, "sharding": instance.sharding, "ring_hosts": hosts}


async def drafting_options(catalog: ModelCatalog, card: ModelCard | None, instance: Instance,
                           engine: EngineDescription,
                           remote_drafting: Callable[[NodeId], Awaitable[dict[str, str]]] | None
                           ) -> OptionValues:
    """Speculative decoding options from the model card: the default drafter, the
    quantized copy that drafts for the model (the engine imports it on first use) and,
    when the master placed one, how to reach the remote drafting node."""
    if card is None or not engine.drafts:
        return {}
    options: OptionValues = {"drafter": card.drafters[0] if card.drafters else "none"}
    build, q_bits = engine.import_weights, card.draft_model_q_bits
    if "draft_model" in card.drafters and q_bits is not None and build is not None:
        try:
            draft: Path = await anyio.to_thread.run_sync(build, catalog, card, q_bits)
            options["draft_model_path"] = draft
        except (OSError, ValueError) as error:
            logger.warning("no draft model for {}: {}", card.model_id, error)
    if instance.drafter_node is not None and remote_drafting is not None:
        options.update(await remote_drafting(instance.drafter_node))
    return options


def shard_options(shard: ShardAssignment) -> OptionValues:
    """What the master decided for this rank alone: the layers its engine offloads to
    the GPU (stamped only for engines that offload, so others never see the option)."""
    return {"gpu_layers": shard.gpu_layers} if shard.gpu_layers else {}
