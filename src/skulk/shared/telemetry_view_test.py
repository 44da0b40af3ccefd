from skulk.shared.telemetry_view import TelemetryView
from skulk.shared.types.ids import NodeId
from skulk.shared.types.telemetry import NodeTelemetry


def reading(node: str, stamp: float, available: int = 5) -> NodeTelemetry:
    return NodeTelemetry(node_id=NodeId(node), stamp=stamp, memory_total_bytes=10,
                         memory_available_bytes=available, cpu_count=2,
                         backends=["llama_cpp-cpu"], has_worker=True)


def test_newest_stamp_wins_whatever_the_arrival_order() -> None:
    view = TelemetryView(clock=lambda: 100.0)
    view.update(reading("a", 90.0, available=1))
    view.update(reading("a", 80.0, available=2))
    assert view.live()[NodeId("a")].memory_available_bytes == 1


def test_expired_readings_drop_on_read() -> None:
    now = [100.0]
    view = TelemetryView(clock=lambda: now[0])
    view.update(reading("a", 95.0).model_copy(update={"card_ttl_seconds": 10.0}))
    assert NodeId("a") in view.live()
    now[0] = 111.0  # more than the TTL after it arrived
    assert view.live() == {}


def test_gossip_never_overwrites_a_nodes_own_card() -> None:
    view = TelemetryView(own_node=NodeId("me"), clock=lambda: 100.0)
    view.update(reading("me", 90.0, available=7), gossip=False)
    view.update(reading("me", 99.0, available=1))  # an echo of ours, or an impostor
    assert view.live()[NodeId("me")].memory_available_bytes == 7


def test_a_peer_whose_clock_is_off_is_neither_invisible_nor_immortal() -> None:
    now = [1000.0]
    view = TelemetryView(clock=lambda: now[0])
    view.update(reading("behind", 1000.0 - 600).model_copy(update={"card_ttl_seconds": 10.0}))
    view.update(reading("ahead", 1000.0 + 600).model_copy(update={"card_ttl_seconds": 10.0}))
    assert set(view.live()) == {"behind", "ahead"}
    now[0] = 1011.0
    assert view.live() == {}, "silent for longer than the TTL: gone, whatever its stamps"


def test_a_reading_from_a_node_not_held_live_counts_as_a_newcomer() -> None:
    now = [100.0]
    view = TelemetryView(clock=lambda: now[0])
    view.update(reading("a", 1.0))
    view.update(reading("a", 2.0))
    assert view.newcomers_heard == 1
    view.update(reading("b", 3.0))
    now[0] += 31.0  # past the readings' TTL: "a" went silent and came back
    view.update(reading("a", 4.0))
    assert view.newcomers_heard == 3
    view.set_own_node(NodeId("me"))
    view.update(reading("me", 5.0), gossip=False)
    assert view.newcomers_heard == 3
