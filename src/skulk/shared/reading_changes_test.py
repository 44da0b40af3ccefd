from skulk.shared.reading_changes import (
    FULL_REFRESH_SECONDS,
    NEWCOMER_GAP_SECONDS,
    ReadingChanges,
)
from skulk.shared.types.ids import NodeId
from skulk.shared.types.telemetry import (
    GpuDevice,
    NodeTelemetry,
    PeerReachability,
    Reachability,
    ReachableAddress,
)

GIB = 1 << 30


def reading(stamp: float, available: int = 33 * GIB, rtt: float = 0.5,
            peers: tuple[str, ...] = ("b",), vram_free: int = 8 * GIB) -> NodeTelemetry:
    edges = [PeerReachability(node_id=NodeId(peer), observed_at=stamp, ttl_seconds=30.0,
                              addresses=[ReachableAddress(address="10.0.0.2", rtt_ms=rtt)])
             for peer in peers]
    return NodeTelemetry(
        node_id=NodeId("a"), stamp=stamp, memory_total_bytes=64 * GIB,
        memory_available_bytes=available, cpu_count=8, backends=["llama_cpp-cpu"],
        has_worker=True, disk_total_bytes=1000 * GIB, disk_free_bytes=500 * GIB,
        gpus=[GpuDevice(name="gpu", backend="cuda", vram_total_bytes=16 * GIB,
                        vram_free_bytes=vram_free)],
        reachability=Reachability(addresses=["10.0.0.1"], listen_ports=[7447], peers=edges))


def test_the_first_reading_goes_and_one_that_only_wiggled_waits_for_the_refresh() -> None:
    changes = ReadingChanges()
    assert changes.should_send(reading(0.0), now=0.0)
    # A new stamp, 100 MB less free memory, another round-trip and probe time: the same.
    wiggled = reading(2.0, available=33 * GIB - 100_000_000, rtt=0.9)
    assert not changes.should_send(wiggled, now=2.0)
    assert not changes.should_send(wiggled, now=FULL_REFRESH_SECONDS - 0.1)
    assert changes.should_send(wiggled, now=FULL_REFRESH_SECONDS)


def test_what_placement_and_people_read_goes_at_once() -> None:
    for changed in (reading(2.0, available=30 * GIB),  # past a 2 % step of 64 GiB
                    reading(2.0, peers=("b", "c")),  # a new edge
                    reading(2.0, vram_free=4 * GIB)):  # a GPU's memory taken
        changes = ReadingChanges()
        changes.should_send(reading(0.0), now=0.0)
        assert changes.should_send(changed, now=2.0)
        assert not changes.should_send(changed, now=4.0)


def test_a_newcomer_is_sent_the_unchanged_reading_at_most_every_few_seconds() -> None:
    changes = ReadingChanges()
    changes.should_send(reading(0.0), now=0.0)
    assert not changes.should_send(reading(2.0), now=2.0, newcomer=True)
    assert changes.should_send(reading(6.0), now=NEWCOMER_GAP_SECONDS, newcomer=True)
    assert not changes.should_send(reading(8.0), now=NEWCOMER_GAP_SECONDS + 2, newcomer=True)
