"""What Skulk knows about an engine without loading it: the one description each engine
declares in its own folder, read by placement, the worker, telemetry and the runner.

A description module must stay cheap to import (the master and the node process read
it): it names its engine class as `module:Class` and never imports the engine itself.
"""

import importlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from skulk.shared.types.instances import Sharding
from skulk.shared.types.model_cards import ModelFormat
from skulk.shared.types.telemetry import GpuDevice
from skulk.worker.engines.options import EngineOptions
from skulk.worker.engines.protocol import Engine, EngineConfig


def no_environment(_config: EngineConfig) -> dict[str, str]:
    """For engines whose runner needs nothing added to its environment."""
    return {}


@dataclass(frozen=True)
class EngineDescription:
    """One engine, as the rest of Skulk sees it."""

    name: str
    engine_class: str
    """`module:Class`, a class taking an `EngineConfig`; only a runner imports it."""
    options: type[EngineOptions]
    """The engine's options model: the node parses its flags with it, the worker the
    options it builds for a runner, which the engine reads typed (`EngineConfig.options`)."""
    weight_format: ModelFormat
    """The format of the weights it loads."""
    overhead_factor: float
    """Resident bytes per byte of weights on disk: weights plus scratch and slack."""
    kv_bytes_per_value: int
    """Bytes per cached key or value element."""
    probe_backend: Callable[[str, Sequence[GpuDevice]], str | None]
    """The backend tag (`<engine>-<compute>`) this node can claim on a platform with these
    GPUs, or None when the engine is not installed. One tag: a GPU build also runs on the
    CPU, so its compute is the best it has. Must not import the engine."""
    shardings: frozenset[Sharding] = frozenset()
    """How one instance may be split across nodes; empty: whole on one node only."""
    split_refusal: Callable[[str, Sharding, int], str | None] | None = None
    """Why it cannot split a model of this config.json `model_type` `width` ways by a
    sharding it has, or None when it can; None here: it splits every model type alike.
    Must not import the engine."""
    runner_environment: Callable[[EngineConfig], dict[str, str]] = no_environment
    """Variables the runner must start with (a preloaded library, thread counts)."""
    drafts: bool = False
    """Whether it decodes speculatively, so it wants the card's drafters and a drafting
    node."""
    imports_weights: bool = False
    """Whether a missing copy of its weights is converted from the node's GGUF on first
    use."""
    offloads_layers: bool = False
    """Whether it puts as many of a shard's layers as fit into a discrete GPU's memory and
    runs the rest from system memory (the master stamps how many: `gpu_layers`)."""
    device_server_class: str | None = None
    """`module:Class` run by ranks other than 0 of a split instance when they do not run
    the model themselves but serve their compute device to rank 0 (the head), which runs
    it (llama.cpp over ggml RPC). Such ranks take no requests and need no weights, their
    side channel goes through the node's members-only relay, and the head loads once they
    serve. None: every rank runs `engine_class` (MLX's ring)."""

    @property
    def head_runs_model(self) -> bool:
        """Whether a split instance's ranks other than 0 only serve their device to rank 0."""
        return self.device_server_class is not None

    def runs_model(self, rank: int, world_size: int) -> bool:
        """Whether this rank runs the model (takes requests, loads weights)."""
        return rank == 0 or world_size == 1 or not self.head_runs_model

    @property
    def splits(self) -> bool:
        """Whether one instance may span several nodes."""
        return bool(self.shardings)

    def runs_as(self, sharding: Sharding, width: int) -> bool:
        """Whether it can run an instance of this shape (whole means a one-wide pipeline)."""
        return (width == 1 and sharding == "pipeline") or sharding in self.shardings

    def shape_refusal(self, sharding: Sharding, width: int) -> str | None:
        """Why it cannot run an instance of this shape, or None when it can."""
        if self.runs_as(sharding, width):
            return None
        if not self.splits:
            return f"{self.name} runs a model whole on one node"
        return f"{self.name} does not split a model by {sharding}"

    def create(self, config: EngineConfig) -> Engine:
        """The engine itself, imported now (only a runner calls this): a device server on
        the ranks that only serve their device."""
        chosen = self.engine_class
        if not self.runs_model(config.rank, config.world_size):
            assert self.device_server_class is not None
            chosen = self.device_server_class
        module_name, _, class_name = chosen.partition(":")
        engine_class: Callable[[EngineConfig], Engine] = getattr(
            importlib.import_module(module_name), class_name)
        return engine_class(config)
