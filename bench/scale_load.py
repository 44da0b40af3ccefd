"""One load of bench/scale.py: events proposed by a cluster's followers at a rate, one at a
time or in bursts, until every node applied them; what they cost per indexed event.

A node's CPU per event is what its event-path tasks spent while the events flowed (the
planes that run whether or not events flow, readings, probes, links and elections, are
left out), less the bus's fan-out in them, which Zenoh does off the publisher's loop.
"""

import random
import time
from typing import Any

import anyio
from bench.scale_harness import Member, ScaleCluster, StepClock
from bench.scale_modelling import freeze_formed_cluster

from skulk.shared.types.events import WeightsFetchProgress
from skulk.shared.types.ids import ModelId, RunnerId


def spent_since(after: dict[str, float], before: dict[str, float]) -> dict[str, float]:
    return {name: seconds - before.get(name, 0.0) for name, seconds in after.items()}


# The tasks of the planes that run whether or not events flow: readings, probes, links,
# elections. What a node spends in its other tasks while events flow is what the events
# cost it.
IDLE_PLANE_TASKS = ("TelemetryView.follow", "OwnReadings.publish_forever",
                    "ReachabilityProber", "NodeLinks", "Election")


def _event_path(task: str) -> bool:
    return not any(name in task for name in IDLE_PLANE_TASKS)


def _event_path_cpu(clock: StepClock, cluster: ScaleCluster) -> dict[str, float]:
    """Each node's CPU so far in its event-path tasks, less the bus's fan-out in them."""
    spent: dict[str, float] = {}
    for (node, task), seconds in clock.busy_by_task.items():
        if _event_path(task):
            spent[node] = spent.get(node, 0.0) + seconds
    for (node, task), seconds in cluster.bus.fan_out.items():
        if _event_path(task) and node in spent:
            spent[node] -= seconds
    return spent


def _event_path_by_task(clock: StepClock, cluster: ScaleCluster, node: str
                        ) -> dict[str, float]:
    """`node`'s CPU so far in each of its event-path tasks, less the bus's fan-out in it."""
    return {task: seconds - cluster.bus.fan_out.get((name, task), 0.0)
            for (name, task), seconds in clock.busy_by_task.items()
            if name == node and _event_path(task)}


def _event_path_fan_out(cluster: ScaleCluster, node: str) -> float:
    return sum(seconds for (name, task), seconds in cluster.bus.fan_out.items()
               if name == node and _event_path(task))


async def _propose(proposers: list[Member], events: int, rate: float, burst: int,
                   one_node: bool = False) -> None:
    """`events` worker events from random proposers, `rate` a second on average, `burst`
    of them sent at once by as many proposers (1: one at a time), or by one (`one_node`)."""
    chooser = random.Random(events * burst)
    member = chooser.choice(proposers)
    for sent in range(events):
        if not one_node or sent % burst == 0:
            member = chooser.choice(proposers)
        sender = member.node.local_events
        assert sender is not None
        event = WeightsFetchProgress(runner_id=RunnerId(f"scale-{member.name}"),
                                     model_id=ModelId("scale"), done_bytes=sent,
                                     total_bytes=events, source=f"peer {member.name}")
        await sender.send(event)
        if (sent + 1) % burst == 0:
            await anyio.sleep(burst / rate)


def _proposals_sent(cluster: ScaleCluster) -> int:
    """Proposals the running nodes put on the wire, resends included."""
    return sum(m.node.local_events.proposals_sent for m in cluster.members.values()
               if m.node.local_events is not None)


def _freeze_between_phases(clock: StepClock) -> None:
    """Keep what the cluster built so far out of later collections (the harness's
    modelling); the pause of this collection is the harness's, not a node's."""
    longest = clock.longest_gc_pause
    freeze_formed_cluster()
    clock.longest_gc_pause = longest


def _duplicates(cluster: ScaleCluster) -> int:
    """Indexed events the running nodes received again after applying them."""
    return sum(m.node.replica.duplicates for m in cluster.members.values())


async def measure_load(cluster: ScaleCluster, clock: StepClock, master: Member, *, events: int,
                rate: float, burst: int, one_node: bool = False) -> dict[str, Any]:
    """Propose `events` and wait until all are applied everywhere: the figures per event."""
    _freeze_between_phases(clock)
    n = len(cluster.members)
    followers = [m for m in cluster.members.values() if m is not master]
    first = master.node.replica.next_index()
    cpu_before, traffic_before = _event_path_cpu(clock, cluster), cluster.bus.traffic.copy()
    tasks_before = _event_path_by_task(clock, cluster, master.name)
    fan_out_before, duplicates_before = (_event_path_fan_out(cluster, master.name),
                                         _duplicates(cluster))
    proposed_before = _proposals_sent(cluster)
    started = time.perf_counter()
    await _propose(followers, events, rate, burst, one_node)
    await _until_applied(cluster, first + events, timeout=60 + n)
    seconds = time.perf_counter() - started
    cpu = spent_since(_event_path_cpu(clock, cluster), cpu_before)
    load = cluster.bus.traffic.since(traffic_before)
    indexed = master.node.replica.next_index() - first
    fan_out = _event_path_fan_out(cluster, master.name) - fan_out_before
    again = _duplicates(cluster) - duplicates_before
    by_task = spent_since(_event_path_by_task(clock, cluster, master.name), tasks_before)

    def per_event_ms(name: str) -> float:
        """CPU per indexed event, in ms: the node's event-path tasks' while events flowed."""
        return 1000 * cpu.get(name, 0.0) / indexed

    follower_ms = sorted(per_event_ms(m.name) for m in followers)
    resent = _proposals_sent(cluster) - proposed_before - events
    return {
        "indexed_events": indexed,
        "load_seconds": round(seconds, 3),
        "master_cpu_ms_per_event": round(per_event_ms(master.name), 4),
        "master_bus_fan_out_ms_per_event": round(1000 * fan_out / indexed, 4),
        # Where the master's figure goes: its tasks (the local-event loop checks and
        # decodes the proposals, indexes, logs, seals and publishes; before a02f3d9 a pump
        # task, `ReadyBatches.pump`, checked and decoded; the replica applies on the
        # master's node, `functools` is its reactions, the sync loop takes requests).
        "master_cpu_ms_per_event_by_task": {
            task.rsplit(".", 2)[-2] + "." + task.rsplit(".", 1)[-1] if "." in task else task:
            round(1000 * seconds / indexed, 4)
            for task, seconds in sorted(by_task.items(), key=lambda item: -item[1])
            if 1000 * seconds / indexed >= 0.005},
        # Each proposal message is one signature and one check at the master (a node's
        # proposals ready together leave as one).
        "proposal_messages_per_event": round(load.publications["local_events"] / indexed, 3),
        # Each of the master's publications is one signature (a batch of events).
        "master_signatures_per_event": round(load.publications["global_events"] / indexed, 3),
        "follower_cpu_ms_per_event_median": round(follower_ms[len(follower_ms) // 2], 4),
        "follower_cpu_ms_per_event_max": round(follower_ms[-1], 4),
        # The event's own path (proposal, indexed copies, sync), and everything delivered
        # meanwhile (readings and probes included) per event.
        "event_deliveries_per_event": round(sum(
            load.deliveries[topic] for topic in ("local_events", "global_events",
                                                 "state_sync")) / indexed, 2),
        "deliveries_per_event": round(sum(load.deliveries.values()) / indexed, 2),
        "bytes_per_event": round(sum(load.delivered_bytes.values()) / indexed),
        "local_events_resent_per_event": round(resent / events, 3),
        "indexed_received_twice_per_event": round(again / n / indexed, 3),
        "duplicates_per_event": round((resent + again / n) / events, 3),
    }


async def _until_applied(cluster: ScaleCluster, index: int, timeout: float) -> None:
    """Until every node applied `index` and no proposer has an event pending."""
    with anyio.fail_after(timeout):
        while any(m.node.replica.next_index() < index or
                  (m.node.local_events is not None and m.node.local_events.pending)
                  for m in cluster.members.values()):
            await anyio.sleep(0.02)
