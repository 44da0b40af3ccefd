"""Where an instance's remote drafter runs: a node whose capability card advertises a
drafter, preferring one that holds none of the instance's ranks (the point of drafting
remotely is to spend another machine's cycles, not the verifier's), then the one with
the most memory available, then by id so every master decides alike."""

from collections.abc import Collection, Mapping

from skulk.shared.types.ids import NodeId
from skulk.shared.types.model_cards import ModelCard
from skulk.shared.types.telemetry import NodeTelemetry

REMOTE_DRAFTER = "ngram"  # the drafter a node serves remotely


def choose_drafter_node(card: ModelCard, instance_nodes: Collection[NodeId],
                        nodes: Mapping[NodeId, NodeTelemetry],
                        live: Collection[NodeId] | None = None) -> NodeId | None:
    """The drafting node for an instance on `instance_nodes`, or None when the card does
    not draft remotely or no other node advertises a drafter. A node of the instance
    itself is never chosen: drafting there would be local drafting with a network hop."""
    if "remote" not in card.drafters:
        return None
    candidates = [reading for node_id, reading in nodes.items()
                  if REMOTE_DRAFTER in reading.drafters and node_id not in instance_nodes
                  and (live is None or node_id in live)]
    if not candidates:
        return None
    best = max(candidates, key=lambda r: (r.memory_available_bytes, r.node_id))
    return best.node_id
