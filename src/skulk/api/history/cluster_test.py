import pytest

from skulk.api.history.cluster import NODE_PATH, ClusterHistory
from skulk.api.history.recorder import MetricsHistory, NodeGauges
from skulk.api.history.samples import Marker
from skulk.api.history.totals import CounterTotals
from skulk.shared.types.ids import NodeId


def peer_history(*ats: float) -> MetricsHistory:
    history = MetricsHistory()
    for at in ats:
        history.record(at, CounterTotals(), NodeGauges(cpu_percent=at))
    return history


@pytest.mark.anyio
async def test_refresh_asks_for_what_is_newer_and_keeps_copies() -> None:
    peer = peer_history(1000.0, 1005.0, 1010.0)
    asked: list[str] = []

    async def ask(node_id: NodeId, path: str) -> tuple[object, None] | tuple[None, str]:
        asked.append(f"{node_id} {path}")
        if node_id == "c":
            return None, "no signed answer"
        return peer.answer(float(path.partition("?since=")[2])), None

    history = ClusterHistory(clock=lambda: 1020.0)
    errors = await history.refresh([NodeId("b"), NodeId("c")], ask)
    assert errors == {NodeId("c"): "no signed answer"}
    peer.record(1015.0, CounterTotals(), NodeGauges())
    await history.refresh([NodeId("b")], ask)
    # c never answered: only b is asked from its newest sample; c from the start again.
    assert sorted(asked) == [f"b {NODE_PATH}?since=0.0", f"b {NODE_PATH}?since=1010.0",
                             f"c {NODE_PATH}?since=0.0"]
    samples = history.node_samples(NodeId("a"))
    assert [s.at for s in samples[NodeId("b")]] == [1005.0, 1010.0, 1015.0]
    assert samples[NodeId("a")] == []


@pytest.mark.anyio
async def test_a_malformed_answer_is_reported_not_kept_and_old_samples_age_out() -> None:
    async def ask(node_id: NodeId, path: str) -> tuple[object, None] | tuple[None, str]:
        return {"nodes": {"at": [5.0], "cpu_percent": ["lots"]}}, None

    history = ClusterHistory(clock=lambda: 10.0)
    errors = await history.refresh([NodeId("b")], ask)
    assert errors[NodeId("b")].startswith("malformed history")
    assert NodeId("b") not in history.node_samples(NodeId("a"))

    old = peer_history(0.0, 5.0)

    async def ask_old(node_id: NodeId, path: str) -> tuple[object, None] | tuple[None, str]:
        return old.answer(), None

    history = ClusterHistory(clock=lambda: 5.0 + 3601.0)
    await history.refresh([NodeId("b")], ask_old)
    assert NodeId("b") not in history.node_samples(NodeId("a"))


def test_markers_are_the_own_replicas_within_the_window() -> None:
    history = ClusterHistory(clock=lambda: 4000.0)
    history.own.note(Marker(100.0, "placement", "too old"))
    history.own.note(Marker(3900.0, "failover", "runner failed"))
    assert [m.text for m in history.markers()] == ["runner failed"]
