"""Previews: every shape a model could take on the cluster, fitting or not, and why, with
each one's predicted decode speed."""

from dataclasses import dataclass
from typing import get_args

from skulk.fitting.engines import engine_fit
from skulk.master.placement.cluster import ClusterView, roomiest, workers
from skulk.master.placement.engines import engines_of, runs_engine
from skulk.master.placement.plans import Plan, plan_for
from skulk.master.placement.speed import SpeedPrediction, predict
from skulk.shared.types.ids import NodeId
from skulk.shared.types.instances import Sharding
from skulk.shared.types.model_cards import EngineName, ModelCard
from skulk.shared.types.telemetry import NodeTelemetry

SHARDINGS: tuple[Sharding, ...] = get_args(Sharding)


@dataclass(frozen=True)
class PlacementPreview:
    """One candidate shape: its plan (memory per rank) when nodes exist for it, and the
    reason it cannot be placed, None when it can."""

    engine: EngineName
    sharding: Sharding
    width: int
    plan: Plan | None
    reason: str | None
    speed: SpeedPrediction | None = None
    """Its predicted single-stream decode speed, where its nodes are known."""


def _preview(card: ModelCard, engine: EngineName, sharding: Sharding,
             nodes: list[NodeTelemetry], width: int, cluster: ClusterView
             ) -> PlacementPreview:
    refusal = engine_fit(engine).shape_refusal(sharding, width)
    if refusal is not None:
        return PlacementPreview(engine, sharding, width, None, refusal)
    chosen = roomiest(nodes, engine, width)
    if chosen is None:
        able = sum(1 for n in nodes if runs_engine(n, engine))
        return PlacementPreview(engine, sharding, width, None,
                                f"only {able} usable node(s) run {engine}")
    plan = plan_for(card, engine, sharding, chosen)
    if isinstance(plan, str):
        return PlacementPreview(engine, sharding, width, None, plan)
    speed = predict(card, plan, cluster)
    if plan.fits:
        return PlacementPreview(engine, sharding, width, plan, None, speed)
    short = "; ".join(f"{r.node_id}: {r.shortfall(engine, width)}"
                      for r in plan.ranks if not r.fits)
    return PlacementPreview(engine, sharding, width, plan, f"does not fit ({short})", speed)


def previews(card: ModelCard, cluster: ClusterView,
             excluded: list[NodeId] | None = None) -> list[PlacementPreview]:
    """For 1..N usable nodes, each sharding and each engine the card has weights for."""
    nodes, _ = workers(cluster, excluded or [])
    return [_preview(card, engine, sharding, nodes, width, cluster)
            for width in range(1, len(nodes) + 1)
            for sharding in SHARDINGS
            for engine in engines_of(card)]
