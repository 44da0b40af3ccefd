"""`GET /placement/fits`: per model, its weights and whether it fits whole on each node.

`/instance/previews` answers "where would this model go"; this answers the catalogue's
question, "which nodes could hold this model on their own", with the same admission rule
placement uses (weights x engine overhead + KV for the context ceiling + a floor, strictly
below the node's usable memory).
"""

from collections.abc import Mapping

from fastapi import APIRouter, Query
from pydantic import BaseModel, Field

from skulk.api.context import ApiContext, Context
from skulk.api.serving import resolve_card
from skulk.fitting.memory import usable_bytes
from skulk.master.placement.engines import engines_of, runs_engine
from skulk.master.placement.plans import plan_for
from skulk.shared.types.ids import ModelId, NodeId
from skulk.shared.types.model_cards import EngineName, ModelCard
from skulk.shared.types.telemetry import NodeTelemetry

router = APIRouter(tags=["instances"])


class NodeFit(BaseModel):
    """Whether one node could hold the whole model with one engine."""

    node_id: NodeId = Field(description="The node.")
    engine: EngineName = Field(description="The engine judged.")
    fits: bool = Field(description="Whether the node admits the whole model now.")
    needed_bytes: int | None = Field(description="System memory the model would need "
                                     "there (less the layers its GPU takes); None when the "
                                     "node cannot run the engine at all.")
    gpu_layers: int = Field(default=0, description="Layers it would put on the node's GPU.")
    usable_bytes: int = Field(description="Memory the node can give to new shards.")
    reason: str | None = Field(description="Why it does not fit; None when it does.")


class SourceView(BaseModel):
    """The model's weights in one format."""

    format: str = Field(description="`gguf` or `mlx`.")
    size_bytes: int = Field(description="Size of the weights.")
    on_this_node: bool = Field(description="Whether this node already has them on disk.")


class ModelFits(BaseModel):
    """One model: its weights and, per node and engine, whether it fits whole."""

    model_id: ModelId = Field(description="The model, by canonical id.")
    size_bytes: int = Field(description="Its smallest weights.")
    sources: list[SourceView] = Field(description="Its weights, per format.")
    fits: list[NodeFit] = Field(description="Per node (by id) and engine (preferred first).")


class PlacementFits(BaseModel):
    """Whole-model fits of the catalogue (or of one model) on every live node."""

    waiting_for: list[NodeId] = Field(description="Live nodes whose memory is not known yet.")
    models: list[ModelFits] = Field(description="The models.")


def node_fits(card: ModelCard, nodes: Mapping[NodeId, NodeTelemetry]) -> list[NodeFit]:
    """For each node and each engine the card has weights for: does the model fit whole?"""
    fits: list[NodeFit] = []
    for node_id, node in sorted(nodes.items()):
        room = usable_bytes(node)
        for engine in engines_of(card):
            if not node.has_worker or not runs_engine(node, engine):
                why = "runs no worker" if not node.has_worker else f"does not run {engine}"
                fits.append(NodeFit(node_id=node_id, engine=engine, fits=False,
                                    needed_bytes=None, usable_bytes=room, reason=why))
                continue
            plan = plan_for(card, engine, "pipeline", [node])
            if isinstance(plan, str):
                fits.append(NodeFit(node_id=node_id, engine=engine, fits=False,
                                    needed_bytes=None, usable_bytes=room, reason=plan))
                continue
            rank = plan.ranks[0]
            fits.append(NodeFit(node_id=node_id, engine=engine, fits=rank.fits,
                                needed_bytes=rank.needed_bytes, usable_bytes=room,
                                gpu_layers=rank.gpu_layers,
                                reason=None if rank.fits else rank.shortfall(engine, 1)))
    return fits


def _model_fits(context: ApiContext, card: ModelCard,
                nodes: Mapping[NodeId, NodeTelemetry]) -> ModelFits:
    sources = [SourceView(format=s.format, size_bytes=s.size_bytes,
                          on_this_node=context.cluster.catalog.local_path(card, s.format)
                          is not None)
               for s in card.sources]
    return ModelFits(model_id=card.model_id, size_bytes=card.storage_size, sources=sources,
                     fits=node_fits(card, nodes))


@router.get("/placement/fits", response_model=PlacementFits,
            summary="Per model: its weights and whether it fits whole on each live node")
async def placement_fits(
        context: Context,
        model_id: str | None = Query(default=None, description="One model (id or alias); "
                                     "unset: every model in the catalogue."),
) -> PlacementFits:
    readings = context.cluster.telemetry.live()
    live = frozenset(context.cluster.live_nodes()) or frozenset(
        {context.cluster.node_id, *readings})
    nodes = {n: r for n, r in readings.items() if n in live}
    cards = [resolve_card(context, model_id)] if model_id else context.cluster.catalog.cards()
    return PlacementFits(waiting_for=sorted(live - nodes.keys()),
                         models=[_model_fits(context, card, nodes) for card in cards])
