"""Choosing a plan: the fewest nodes that fit, the preferred engine at each width; a
whole instance goes to a node that already holds the weights when one fits. By default
(`auto`) a wider plan of the same engine replaces that one when it is predicted, from
measurements, to decode clearly faster over machines that run nothing else: a split by
heads on a fast link, never on a slow one. A command that prefers speed gets, of every
plan that fits, the one predicted to decode fastest (speed.py)."""

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import get_args

from skulk.fitting.engines import PLACEABLE, EngineFit, engine_fit
from skulk.master.placement.cluster import (
    ClusterView,
    busy_nodes,
    holders_first,
    on_separate_machines,
    roomiest,
    workers,
)
from skulk.master.placement.engines import engines_of, runs_engine
from skulk.master.placement.errors import PlacementError
from skulk.master.placement.plans import Plan, plan_for
from skulk.master.placement.speed import SpeedPrediction, predict
from skulk.shared.types.commands import PlaceInstance
from skulk.shared.types.ids import NodeId
from skulk.shared.types.instances import Sharding
from skulk.shared.types.model_cards import EngineName, ModelCard
from skulk.shared.types.telemetry import NodeTelemetry

SHARDINGS: tuple[Sharding, ...] = get_args(Sharding)
AUTO_MIN_SPEEDUP = 1.5
"""How much faster than the narrowest plan a wider one must be predicted for a default
placement to take it: the predictions are within 25 % of measured speeds, and the wider
plan takes nodes another model could use."""


@dataclass
class _Misses:
    """What went wrong across the attempts, for the error."""

    per_node: dict[NodeId, dict[EngineName, str]] = field(default_factory=dict)
    shapes: list[str] = field(default_factory=list)

    def node(self, node_id: NodeId, engine: EngineName, why: str) -> None:
        self.per_node.setdefault(node_id, {})[engine] = why

    def backends(self, nodes: list[NodeTelemetry], engine: EngineName) -> None:
        """Note, once per engine tried, the nodes that cannot run it."""
        for node in nodes:
            if not runs_engine(node, engine):
                tags = ", ".join(node.backends) or "none"
                self.node(node.node_id, engine, f"has no {engine} backend (has {tags})")

    def shape(self, why: str) -> None:
        if why not in self.shapes:
            self.shapes.append(why)

    def reasons(self) -> dict[NodeId, str]:
        return {n: "; ".join(by_engine.values()) for n, by_engine in self.per_node.items()}


def _engines(card: ModelCard, command: PlaceInstance) -> list[EngineName] | PlacementError:
    available = engines_of(card)
    if command.engine is None:
        if not available:
            return PlacementError(f"{card.model_id} has no weights any engine loads")
        return available
    if command.engine not in available:
        formats = ", ".join(s.format for s in card.sources)
        return PlacementError(f"{card.model_id} has no weights for engine {command.engine} "
                              f"(it has {formats}); leave the engine unset or pick another")
    return [command.engine]


def _attempts(engines: list[EngineName], command: PlaceInstance, low: int, high: int,
              misses: _Misses) -> Iterator[tuple[int, EngineName]]:
    """(width, engine) pairs to try, narrowest first, preferred engine first."""
    for width in range(low, high + 1):
        able = [e for e in PLACEABLE if e.runs_as(command.sharding, width)]
        for engine in engines:
            refusal = engine_fit(engine).shape_refusal(command.sharding, width)
            if refusal is None:
                yield width, engine
            elif not any(e.name in engines for e in able):
                # Otherwise an engine that takes this shape is tried and explains itself.
                misses.shape(_shape_miss(refusal, command, able))


def _shape_miss(refusal: str, command: PlaceInstance, able: list[EngineFit]) -> str:
    how = "tensor sharding" if command.sharding == "tensor" else "splitting"
    names = " or ".join(e.name for e in able)
    formats = " or ".join(e.weight_format for e in able)
    fix = (f"pin {names} or leave the engine unset" if command.engine
           else f"the card of {command.model_id} has no {formats} weights")
    return f"{refusal} and {how} needs {names} ({fix})"


def _try(card: ModelCard, command: PlaceInstance, nodes: list[NodeTelemetry],
         width: int, engine: EngineName, misses: _Misses) -> Plan | None:
    misses.backends(nodes, engine)
    if width == 1:
        for holder in holders_first(nodes, card, engine):
            whole = plan_for(card, engine, command.sharding, [holder])
            if isinstance(whole, Plan) and whole.fits:
                return whole  # its weights are there already: no fetch
    chosen = roomiest(nodes, engine, width)
    if chosen is None:
        return None
    plan = plan_for(card, engine, command.sharding, chosen)
    if isinstance(plan, str):
        misses.shape(plan)
        return None
    if plan.fits:
        return plan
    if width == 1:  # the roomiest alone did not fit, so none does: say so for each
        wholes = [plan_for(card, engine, command.sharding, [n]) for n in nodes
                  if runs_engine(n, engine)]
        plan = Plan(engine, command.sharding,
                    tuple(p.ranks[0] for p in wholes if isinstance(p, Plan)))
    for rank in plan.ranks:
        if not rank.fits:
            misses.node(rank.node_id, engine, rank.shortfall(engine, width))
    return None


def choose_plan(command: PlaceInstance, card: ModelCard,
                cluster: ClusterView) -> Plan | PlacementError:
    """The plan the command prefers (the narrowest that fits, unless `auto` finds a
    clearly faster wider one or `speed` asks for the fastest), or why none fits
    (impossible, or info pending)."""
    engines = _engines(card, command)
    if isinstance(engines, PlacementError):
        return engines
    nodes, refusals = workers(cluster, command.excluded_nodes)
    misses = _Misses()
    if not nodes:
        return _failure(card, cluster, nodes, refusals, [])
    high = len(nodes)  # no wider than the cluster
    low = max(command.min_nodes, 1)
    if low > high:
        misses.shape(f"min_nodes={low} asks for more than the {high} usable node(s)")
    if command.prefer == "speed":
        fastest = _fastest(card, command, cluster, nodes, range(low, high + 1), engines,
                           misses)
        if fastest is not None:
            return fastest
    else:
        for width, engine in _attempts(engines, command, low, high, misses):
            plan = _try(card, command, nodes, width, engine, misses)
            if plan is not None and command.prefer == "auto":
                return _clearly_faster(card, command, cluster, nodes, plan) or plan
            if plan is not None:
                return plan
    return _failure(card, cluster, nodes, refusals | misses.reasons(), misses.shapes)


def _fastest(card: ModelCard, command: PlaceInstance, cluster: ClusterView,
             nodes: list[NodeTelemetry], widths: range, engines: list[EngineName],
             misses: _Misses) -> Plan | None:
    """Of every plan that fits, each width and sharding and engine, the one predicted to
    decode one stream fastest (the narrowest and preferred engine on a tie)."""
    best = _best(_predicted(card, command, cluster, nodes, widths, engines, misses))
    return None if best is None else best[1]


def _clearly_faster(card: ModelCard, command: PlaceInstance, cluster: ClusterView,
                    nodes: list[NodeTelemetry], narrowest: Plan) -> Plan | None:
    """A wider plan of the narrowest's engine, over machines no instance uses, predicted
    from measurements (the links' rate aside) to decode at least AUTO_MIN_SPEEDUP times
    faster than `narrowest`; None when there is none."""
    baseline = predict(card, narrowest, cluster)
    if baseline is None or not baseline.measured:
        return None
    busy = busy_nodes(cluster)
    free = [n for n in nodes if n.node_id not in busy]
    wider = range(narrowest.width + 1, len(free) + 1)
    candidates = ((prediction, plan) for prediction, plan in _predicted(
        card, command, cluster, free, wider, [narrowest.engine], _Misses())
        if prediction.measured and on_separate_machines(
            [cluster.nodes[rank.node_id] for rank in plan.ranks])
        and prediction.tokens_per_second >= AUTO_MIN_SPEEDUP * baseline.tokens_per_second)
    best = _best(candidates)
    return None if best is None else best[1]


def _predicted(card: ModelCard, command: PlaceInstance, cluster: ClusterView,
               nodes: list[NodeTelemetry], widths: range, engines: list[EngineName],
               misses: _Misses) -> Iterator[tuple[SpeedPrediction, Plan]]:
    """Every plan that fits, each width and sharding and engine, with its prediction."""
    for width in widths:
        for sharding in SHARDINGS:
            shaped = command.model_copy(update={"sharding": sharding})
            for _, engine in _attempts(engines, shaped, width, width, misses):
                plan = _try(card, shaped, nodes, width, engine, misses)
                prediction = None if plan is None else predict(card, plan, cluster)
                if plan is not None and prediction is not None:
                    yield prediction, plan


def _best(candidates: Iterable[tuple[SpeedPrediction, Plan]]
          ) -> tuple[SpeedPrediction, Plan] | None:
    """The fastest predicted, the first of equals."""
    best: tuple[SpeedPrediction, Plan] | None = None
    for prediction, plan in candidates:
        if best is None or prediction.tokens_per_second > best[0].tokens_per_second:
            best = (prediction, plan)
    return best


def _failure(card: ModelCard, cluster: ClusterView, nodes: list[NodeTelemetry],
             per_node: dict[NodeId, str], shapes: list[str]) -> PlacementError:
    missing = cluster.missing_readings()
    if not nodes:
        message = ("no node has reported its memory yet" if missing and not cluster.nodes
                   else "no live node runs a worker this placement may use")
    else:
        message = f"no set of nodes can hold {card.model_id}"
    if shapes:
        message += ": " + "; ".join(shapes)
    if missing:
        message += f"; still waiting for the readings of {', '.join(missing)}"
        return PlacementError(message, per_node, kind="pending")
    return PlacementError(message, per_node)
