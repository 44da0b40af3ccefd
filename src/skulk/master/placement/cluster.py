"""The cluster as placement sees it: live members, their readings, placed instances."""

from collections.abc import Mapping
from dataclasses import dataclass, field

from skulk.fitting.engines import engine_fit
from skulk.fitting.offload import capacity_bytes
from skulk.master.placement.engines import runs_engine
from skulk.master.placement.ring import DEFAULT_RING_PORTS
from skulk.shared.types.ids import InstanceId, NodeId
from skulk.shared.types.instances import Instance
from skulk.shared.types.model_cards import EngineName, ModelCard
from skulk.shared.types.telemetry import NodeTelemetry


@dataclass(frozen=True)
class ClusterView:
    """What placement reads besides the command and the card. Plain data, no I/O."""

    nodes: Mapping[NodeId, NodeTelemetry]
    # Members by liveness; a member without readings makes a failed placement `pending`.
    # None: the members are exactly the nodes with readings.
    live_nodes: frozenset[NodeId] | None = None
    instances: Mapping[InstanceId, Instance] = field(default_factory=dict)
    ring_ports: range = DEFAULT_RING_PORTS
    # When observed edges are judged fresh or expired; None reads the clock.
    now: float | None = None

    def missing_readings(self) -> list[NodeId]:
        """Live members whose memory placement has not heard yet."""
        if self.live_nodes is None:
            return []
        return sorted(self.live_nodes - self.nodes.keys())


def workers(cluster: ClusterView, excluded: list[NodeId]
            ) -> tuple[list[NodeTelemetry], dict[NodeId, str]]:
    """Nodes a placement may use, by id, and why each other node may not."""
    usable: list[NodeTelemetry] = []
    refusals: dict[NodeId, str] = {}
    for node_id, node in sorted(cluster.nodes.items()):
        if node_id in excluded:
            refusals[node_id] = "excluded by the request"
        elif not node.has_worker:
            refusals[node_id] = "runs no worker"
        else:
            usable.append(node)
    return usable, refusals


def holders_first(nodes: list[NodeTelemetry], card: ModelCard, engine: EngineName
                  ) -> list[NodeTelemetry]:
    """The nodes whose store holds a whole copy of `card`'s weights for `engine` (its own
    format, or the GGUF an importing engine converts), roomiest first: a whole instance
    placed on one of them starts without copying anything."""
    formats = engine_fit(engine).usable_formats
    holding = [n for n in nodes if runs_engine(n, engine) and any(
        held.model_id == card.model_id and held.format in formats and held.layers is None
        for held in n.held_models)]
    return sorted(holding, key=lambda n: (-capacity_bytes(n, engine), n.node_id))


def roomiest(nodes: list[NodeTelemetry], engine: EngineName, width: int
             ) -> list[NodeTelemetry] | None:
    """The `width` nodes running `engine` with the most room (usable memory, plus the free
    memory of the GPUs it offloads to), in rank order.

    Taking the roomiest is enough: with shares proportional to memory (pipeline) or equal
    (tensor), no other set of that size has a larger total or a larger smallest member.
    Ranks follow node ids so that re-placing on the same nodes gives the same ranks,
    except that an engine whose head runs the model (llama.cpp) gets its head, rank 0, on
    the roomiest node: the head holds the whole model file and the layers' inputs.
    """
    able = [n for n in nodes if runs_engine(n, engine)]
    if len(able) < width:
        return None
    chosen = sorted(able, key=lambda n: (-capacity_bytes(n, engine), n.node_id))[:width]
    ranked = sorted(chosen, key=lambda n: n.node_id)
    if width > 1 and engine_fit(engine).head_runs_model:
        ranked.remove(chosen[0])
        ranked.insert(0, chosen[0])
    return ranked


def busy_nodes(cluster: ClusterView) -> set[NodeId]:
    """The nodes some placed instance has a rank on."""
    return {shard.node_id for instance in cluster.instances.values()
            for shard in instance.shards.values()}


def on_separate_machines(nodes: list[NodeTelemetry]) -> bool:
    """Whether no two of `nodes` share a machine, as far as their readings show: each
    reported its addresses and none reported another's (nodes on one machine share its
    memory, so splitting a model between them reads no faster)."""
    seen: set[str] = set()
    for node in nodes:
        addresses = set(node.reachability.addresses)
        if not addresses or addresses & seen:
            return False
        seen |= addresses
    return True
