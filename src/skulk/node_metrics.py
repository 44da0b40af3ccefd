"""What the node's metrics and history read from its parts: the counters at each scrape,
the gauges at each history sample, and when its certificates expire."""

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import psutil
from cryptography import x509
from loguru import logger

from skulk.api.history.recorder import InstanceQueue, NodeGauges
from skulk.api.metrics import MachineUse, NodeCounters, QueueFill
from skulk.master.admission import concurrency, queue_bound, unfinished
from skulk.shared.types.ids import NodeId
from skulk.shared.types.telemetry import NodeTelemetry
from skulk.trust.files import TrustFiles

if TYPE_CHECKING:
    from skulk.node_api import NodeParts


def certificate_expiry(data_dir: Path, secure: bool) -> dict[str, float]:
    """When the node's certificate and the cluster's CA stop being valid, Unix seconds
    (read once: they change only when the node is enrolled again)."""
    if not secure:
        return {}
    files = TrustFiles(data_dir)
    expiry: dict[str, float] = {}
    for name, path in (("node", files.node_certificate), ("ca", files.ca_certificate)):
        try:
            certificate = x509.load_pem_x509_certificate(path.read_bytes())
        except (OSError, ValueError) as error:
            logger.warning("cannot read the {} certificate's expiry at {}: {}", name, path,
                           error)
            continue
        expiry[name] = certificate.not_valid_after_utc.timestamp()
    return expiry


def _instance_queues(parts: "NodeParts", max_queue: int | None,
                     readings: Mapping[NodeId, NodeTelemetry]) -> dict[str, QueueFill]:
    state = parts.replica.state
    return {instance.instance_id: QueueFill(
        depth=unfinished(state, instance),
        limit=concurrency(instance, readings) + queue_bound(instance, max_queue, readings))
        for instance in state.instances.values()}


def _vram(reading: NodeTelemetry | None) -> tuple[int, int]:
    """GPU memory (used, total) over the GPUs whose size is known."""
    gpus = [g for g in (reading.gpus if reading else []) if g.vram_total_bytes]
    return (sum(g.vram_total_bytes - g.vram_free_bytes for g in gpus),
            sum(g.vram_total_bytes for g in gpus))


def machine_use(reading: NodeTelemetry | None) -> MachineUse:
    """The machine's CPU time now, and its memory and VRAM as of its latest reading."""
    times = psutil.cpu_times()
    idle = times.idle + getattr(times, "iowait", 0.0)
    used, total = _vram(reading)
    return MachineUse(
        cpu_busy_seconds=sum(times) - idle, cpu_count=psutil.cpu_count() or 1,
        memory_used_bytes=(reading.memory_total_bytes - reading.memory_available_bytes
                           if reading else 0),
        memory_total_bytes=reading.memory_total_bytes if reading else 0,
        vram_used_bytes=used, vram_total_bytes=total)


def node_counters(parts: "NodeParts", *, max_queue: int | None,
                  certificates: Mapping[str, float]) -> NodeCounters:
    """What the node counts, read at each scrape."""
    master = parts.seat.master
    readings = parts.telemetry.live()
    own = readings.get(parts.node_id)
    return NodeCounters(
        open_streams=len(parts.streams.open_commands()),
        direct_streams=_direct_streams(parts),
        elections=parts.election.campaigns,
        runner_failures=parts.worker.runner_failures if parts.worker is not None else 0,
        events_indexed=master.events_indexed if master is not None else 0,
        live_nodes=len(parts.members.live), is_master=parts.election.master == parts.node_id,
        dropped_messages=dict(parts.dropped.counts),
        disk_free_bytes=own.disk_free_bytes if own else 0,
        disk_total_bytes=own.disk_total_bytes if own else 0,
        certificate_expiry=certificates,
        instance_queues=_instance_queues(parts, max_queue, readings),
        machine=machine_use(own))


def _direct_streams(parts: "NodeParts") -> int:
    direct = parts.worker.direct_streams if parts.worker is not None else None
    return direct.writing() if direct is not None else 0


def node_gauges(parts: "NodeParts") -> NodeGauges:
    """The node's gauges for one history sample: its open streams, the machine's CPU
    since the last sample, memory and VRAM from its latest reading, its runners' failures,
    and each instance's unfinished requests."""
    machine = machine_use(parts.telemetry.live().get(parts.node_id))
    state = parts.replica.state
    return NodeGauges(
        queue_depth=len(parts.streams.open_commands()),
        cpu_percent=psutil.cpu_percent(interval=None),
        memory_used_bytes=machine.memory_used_bytes,
        memory_total_bytes=machine.memory_total_bytes,
        vram_used_bytes=machine.vram_used_bytes, vram_total_bytes=machine.vram_total_bytes,
        runner_failures=parts.worker.runner_failures if parts.worker is not None else 0,
        instances={i.instance_id: InstanceQueue(model_id=i.model_id,
                                                depth=unfinished(state, i))
                   for i in state.instances.values()})
