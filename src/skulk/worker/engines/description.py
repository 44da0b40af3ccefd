"""What Skulk knows about an engine without loading it: the one description each engine
declares in its own folder, read by the worker, telemetry and the runner; the part
placement reads is the description's fit (`skulk/fitting/engines.py`).

A description module must stay cheap to import (the node process reads it, not only a
runner): it names its engine class as `module:Class` and never imports the engine itself.
"""

import importlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from skulk.fitting.engines import EngineFit
from skulk.models.catalog import ModelCatalog
from skulk.shared.types.model_cards import ModelCard, ModelFormat
from skulk.shared.types.telemetry import GpuDevice
from skulk.worker.engines.machine_check import MachineCheck
from skulk.worker.engines.options import EngineOptions
from skulk.worker.engines.protocol import Engine, EngineConfig

WeightsImporter = Callable[[ModelCatalog, ModelCard, int | None], Path]
"""Builds an engine's weights of a card from another format the node holds (q_bits: a
quantized copy, None: as the source is) and returns where they are."""


def no_versions() -> dict[str, str | None]:
    """For engines that report no native library version of their own."""
    return {}


def no_checks() -> list[MachineCheck]:
    """For engines `skulk doctor` has nothing to check of."""
    return []


def no_environment(_config: EngineConfig) -> dict[str, str]:
    """For engines whose runner needs nothing added to its environment."""
    return {}


@dataclass(frozen=True)
class EngineDescription:
    """One engine, as the rest of Skulk sees it: its fit (what placement reads, declared in
    `skulk/fitting/engines.py`) and what the node and its runners need."""

    fit: EngineFit
    """Its weight format, memory figures, shardings and what its ranks run: what the master
    places by and the worker re-checks. Its name is the engine's."""
    engine_class: str
    """`module:Class`, a class taking an `EngineConfig`; only a runner imports it."""
    options: type[EngineOptions]
    """The engine's options model: the node parses its flags with it, the worker the
    options it builds for a runner, which the engine reads typed (`EngineConfig.options`)."""
    probe_backend: Callable[[str, Sequence[GpuDevice]], str | None]
    """The backend tag (`<engine>-<compute>`) this node can claim on a platform with these
    GPUs, or None when the engine is not installed. One tag: a GPU build also runs on the
    CPU, so its compute is the best it has. Must not import the engine."""
    runner_environment: Callable[[EngineConfig], dict[str, str]] = no_environment
    """Variables the runner must start with (a preloaded library, thread counts)."""
    device_server_class: str | None = None
    """`module:Class` run by ranks other than 0 of a split instance when they do not run
    the model themselves but serve their compute device to rank 0 (the head), which runs
    it (llama.cpp over ggml RPC). Such ranks take no requests and need no weights, their
    side channel admits only members (TLS inside its own sockets), and the head loads
    once they serve. None: every rank runs `engine_class` (MLX's ring). Given exactly when the fit
    says `head_runs_model`."""
    stage_copies: bool = False
    """Whether a rank of a pipeline split loads only its layers' files (a stage copy of
    the weights, fetched and stored apart) rather than the whole model's."""
    import_weights: WeightsImporter | None = None
    """How its weights are built from the fit's `imports_from` format on first use when
    the node lacks them (must not import the engine: it runs in the node). Given exactly
    when the fit says it imports its weights."""
    native_versions: Callable[[], dict[str, str | None]] = no_versions
    """The versions of the native libraries this build carries, by `Versions` field
    (llama.cpp: `ggml`), found without importing the engine."""
    machine_checks: Callable[[], list[MachineCheck]] = no_checks
    """`skulk doctor`'s checks of this engine on this machine (installed, built with what
    the machine could use); must not import the engine."""

    def __post_init__(self) -> None:
        if self.fit.head_runs_model != (self.device_server_class is not None):
            raise TypeError(f"engine {self.fit.name!r}: a device server class is given "
                            "exactly when its fit says the head runs the model")
        if self.fit.imports_weights != (self.import_weights is not None):
            raise TypeError(f"engine {self.fit.name!r}: import_weights is given exactly "
                            "when its fit says it imports its weights (imports_from)")

    @property
    def name(self) -> str:
        return self.fit.name

    @property
    def weight_format(self) -> ModelFormat:
        return self.fit.weight_format

    @property
    def imports_weights(self) -> bool:
        return self.fit.imports_weights

    @property
    def imports_from(self) -> ModelFormat | None:
        return self.fit.imports_from

    @property
    def drafts(self) -> bool:
        return self.fit.drafts

    @property
    def head_runs_model(self) -> bool:
        return self.fit.head_runs_model

    def runs_model(self, rank: int, world_size: int) -> bool:
        return self.fit.runs_model(rank, world_size)

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
