"""Placement's entry point: from a command, a card and the cluster to an Instance."""

from collections.abc import Callable

from skulk.fitting.engines import engine_fit
from skulk.fitting.memory import context_token_limit
from skulk.master.placement.cluster import ClusterView
from skulk.master.placement.drafter import choose_drafter_node
from skulk.master.placement.errors import PlacementError
from skulk.master.placement.plans import Plan
from skulk.master.placement.ring import assign_ring_port
from skulk.master.placement.select import choose_plan
from skulk.shared.topology import MissingEdges, ring_hosts
from skulk.shared.types.commands import PlaceInstance
from skulk.shared.types.ids import InstanceId, RunnerId
from skulk.shared.types.instances import Instance, ShardAssignment
from skulk.shared.types.model_cards import ModelCard


def instance_from_plan(instance_id: InstanceId, card: ModelCard, plan: Plan,
                       cluster: ClusterView, new_runner_id: Callable[[], RunnerId]
                       ) -> Instance | PlacementError:
    """Stamp the plan (with each rank's GPU layers), the engine, the context ceiling and a
    ring port onto an Instance."""
    engine = engine_fit(plan.engine)
    ring_port = None
    if plan.width > 1 and engine.splits:
        ring_port = assign_ring_port(instance_id, plan.width, cluster.instances.values(),
                                     cluster.ring_ports)
        if ring_port is None:
            return PlacementError(
                f"no {plan.width} free ring ports in {cluster.ring_ports.start}-"
                f"{cluster.ring_ports.stop - 1}; delete an instance or widen the range")
    hosts: list[str | None] = [None] * plan.width
    if ring_port is not None:
        # Every rank must dial the same hosts, so the master decides them once, from the
        # edges the nodes observed, and stamps them on the instance.
        observed = ring_hosts([rank.node_id for rank in plan.ranks], cluster.nodes,
                              now=cluster.now)
        if isinstance(observed, MissingEdges):
            return PlacementError(f"the ring cannot be wired: {observed.describe()}",
                                  observed.per_node)
        hosts = list(observed)
    shards = {
        new_runner_id(): ShardAssignment(node_id=rank.node_id, rank=index,
                                         world_size=plan.width, start_layer=rank.start_layer,
                                         end_layer=rank.end_layer, ring_host=hosts[index],
                                         gpu_layers=rank.gpu_layers)
        for index, rank in enumerate(plan.ranks)
    }
    drafter_node = None
    if engine.drafts:
        drafter_node = choose_drafter_node(card, {r.node_id for r in plan.ranks},
                                           cluster.nodes, cluster.live_nodes)
    return Instance(instance_id=instance_id, model_id=card.model_id, engine=plan.engine,
                    sharding=plan.sharding, shards=shards,
                    context_token_limit=context_token_limit(card), ring_port=ring_port,
                    drafter_node=drafter_node)


def place(command: PlaceInstance, card: ModelCard, cluster: ClusterView,
          new_runner_id: Callable[[], RunnerId]) -> Instance | PlacementError:
    """Place `card` as `command` asks: the narrowest fitting plan, as an Instance."""
    plan = choose_plan(command, card, cluster)
    if isinstance(plan, PlacementError):
        return plan
    return instance_from_plan(command.instance_id, card, plan, cluster, new_runner_id)
