"""This node's readings: what the machine has (memory, engines, GPUs) and what the node's
parts add (warm models, the weights port, reachability, endpoints and links).

`NodeMachine` is what the worker's fit guard reads; `OwnReadings` assembles the reading
the node sends on the telemetry plane every few seconds.
"""

import time

import anyio

from skulk.cluster.reachability import ReachabilityProber
from skulk.fitting.speed import memory_read_bytes_per_second
from skulk.node_calibration import (
    MLX_BACKENDS,
    calibration_file,
    kept_calibration,
    measure_decode_calibration,
)
from skulk.node_config import NodeConfig
from skulk.node_links import NodeLinks
from skulk.node_weights import NodeWeights
from skulk.shared.channels import Sender
from skulk.shared.reading_changes import READING_TTL_SECONDS, ReadingChanges
from skulk.shared.telemetry_view import TelemetryView
from skulk.shared.types.ids import NodeId
from skulk.shared.types.telemetry import DecodeCalibration, GpuDevice, NodeTelemetry
from skulk.worker.draft_service import ADVERTISED_DRAFTERS
from skulk.worker.engines.node_options import EngineLimits
from skulk.worker.telemetry import read_telemetry
from skulk.worker.worker import Worker

READING_INTERVAL_SECONDS = 2.0


class NodeMachine:
    """The machine under the node: its engines, its GPUs (refreshed as runners load, see
    `keep_gpus`) and its memory now."""

    def __init__(self, node_id: NodeId, config: NodeConfig, *, backends: list[str],
                 gpus: list[GpuDevice]) -> None:
        self.node_id = node_id
        self.config = config
        self.backends = backends
        self.gpus = gpus
        self.limits = EngineLimits.of(config.engine_options, config.batching)

    def keep_gpus(self, gpus: list[GpuDevice]) -> None:
        self.gpus = gpus

    def read_memory(self) -> NodeTelemetry:
        """This node's memory now, for the worker's fit guard."""
        config = self.config
        return read_telemetry(self.node_id, has_worker=True, backends=self.backends,
                              data_dir=config.data_dir, gpus=self.gpus,
                              memory_limit=config.memory_limit_bytes, limits=self.limits)


class OwnReadings:
    """Assembles the reading this node publishes from the machine and its parts."""

    def __init__(self, machine: NodeMachine, *, prober: ReachabilityProber,
                 links: NodeLinks, worker: Worker | None,
                 weights: NodeWeights | None) -> None:
        self._machine = machine
        self._prober = prober
        self._links = links
        self._worker = worker
        self._weights = weights
        self._calibration: DecodeCalibration | None = None

    def reading(self) -> NodeTelemetry:
        machine, config = self._machine, self._machine.config
        worker = config.run_worker
        reading = read_telemetry(
            machine.node_id, has_worker=worker, backends=machine.backends if worker else [],
            data_dir=config.data_dir,
            warm=[] if self._worker is None else self._worker.warm_models(),
            drafters=ADVERTISED_DRAFTERS if worker else [],
            models_dir=config.data_dir / "models" if worker else None,
            weights_port=None if self._weights is None else self._weights.port,
            gpus=machine.gpus, memory_limit=config.memory_limit_bytes,
            reachability=self._prober.reachability(),
            limits=machine.limits if worker else None)
        return self._links.stamp(reading).model_copy(
            update={"card_ttl_seconds": READING_TTL_SECONDS,
                    "memory_read_bytes_per_second":
                        memory_read_bytes_per_second() if worker else None,
                    "decode_calibration": self._calibration})

    def _runs_mlx(self) -> bool:
        machine = self._machine
        return machine.config.run_worker and any(b in MLX_BACKENDS for b in machine.backends)

    async def calibrate(self) -> None:
        """Measure (or read what this machine kept of) the decode constants of a worker
        that runs MLX; the readings carry them from then on. What the machine kept is
        read first, for the first reading already."""
        if self._runs_mlx():
            self._calibration = kept_calibration(calibration_file())
            self._calibration = await measure_decode_calibration()

    async def publish_forever(self, view: TelemetryView, readings: Sender[NodeTelemetry],
                              interval: float = READING_INTERVAL_SECONDS,
                              changes: ReadingChanges | None = None) -> None:
        """Every `interval` seconds: take this node's reading and keep it; send it when it
        changed, when the last one sent is old, or when a node this one had not heard
        from appeared (it has none of the unchanged readings yet)."""
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(self.calibrate)
            await anyio.lowlevel.checkpoint()  # a kept calibration goes in the first reading
            await self._publish(view, readings, interval, changes or ReadingChanges())

    async def _publish(self, view: TelemetryView, readings: Sender[NodeTelemetry],
                       interval: float, changes: ReadingChanges) -> None:
        newcomers = -1
        while True:
            reading = self.reading()
            view.update(reading, gossip=False)  # ours needs no round trip
            newcomer, newcomers = view.newcomers_heard != newcomers, view.newcomers_heard
            if changes.should_send(reading, time.monotonic(), newcomer=newcomer):
                await readings.send(reading)
            await anyio.sleep(interval)
