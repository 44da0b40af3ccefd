"""Placing the remote drafter: another node that advertises one, the roomiest first;
never a node of the instance; none when the card does not draft remotely."""

from pathlib import Path

from skulk.master.placement.drafter import choose_drafter_node
from skulk.models.catalog import ModelCatalog
from skulk.shared.types.ids import NodeId
from skulk.shared.types.telemetry import NodeTelemetry


def reading(node: str, available: int, drafters: list[str]) -> NodeTelemetry:
    return NodeTelemetry(node_id=NodeId(node), stamp=0.0, memory_total_bytes=2 * available,
                         memory_available_bytes=available, cpu_count=2, backends=["mlx"],
                         has_worker=True, drafters=drafters)


def test_prefers_another_node_with_the_most_memory(tmp_path: Path) -> None:
    card = ModelCatalog.builtin(tmp_path).resolve("smollm2-135m")
    assert card is not None and "remote" in card.drafters
    nodes = {NodeId(n): reading(n, mem, ["ngram"]) for n, mem in
             (("a", 9), ("b", 5), ("c", 7))}
    assert choose_drafter_node(card, {NodeId("a")}, nodes) == "c"
    assert choose_drafter_node(card, {NodeId("a")}, nodes, live={NodeId("a"),
                                                                   NodeId("b")}) == "b"
    assert choose_drafter_node(card, {NodeId("a"), NodeId("b"), NodeId("c")}, nodes) is None
    quiet = {**nodes, NodeId("c"): reading("c", 7, [])}
    assert choose_drafter_node(card, {NodeId("a")}, quiet) == "b"
    local_only = card.model_copy(update={"drafters": ["ngram"]})
    assert choose_drafter_node(local_only, {NodeId("a")}, nodes) is None
