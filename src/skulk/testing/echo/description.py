"""The echo engine as the rest of Skulk sees it. Never advertised or placed: tests hand
it to a runner by name once `use_test_engines` has registered it."""

import os
from collections.abc import Sequence

from pydantic import Field

from skulk.fitting.engines import EngineFit
from skulk.shared.types.telemetry import GpuDevice
from skulk.worker.engines.description import EngineDescription
from skulk.worker.engines.options import EngineOptions
from skulk.worker.engines.registry import EXTRA_ENGINES_VARIABLE


class EchoOptions(EngineOptions):
    """Knobs for tests of the runner path."""

    max_batch: int = Field(default=1, ge=1)
    """Requests echoed together, one word each per step; the rest wait their turn."""
    delay: float = Field(default=0, ge=0)
    """Seconds per step that echoes a word."""
    crash_at: int = Field(default=0, ge=0)
    """The token at which the whole process exits abruptly (0: never)."""
    fail_load: bool = False
    """Fail on load."""
    load_seconds: float = Field(default=0, ge=0)
    """Seconds loading takes (the runner reads no messages meanwhile)."""
    ignore_sigterm: bool = False
    """Ignore SIGTERM, so teardown must escalate."""

    def batch_size(self) -> int:
        return self.max_batch if self.batching else 1


def never_advertised(_platform: str, _gpus: Sequence[GpuDevice]) -> None:
    """Telemetry never claims the echo engine."""
    return None


ECHO = EngineDescription(
    # It loads nothing; tests run it in place of llama.cpp. Never placed.
    fit=EngineFit(name="echo", weight_format="gguf", overhead_factor=1.0,
                  kv_bytes_per_value=0),
    engine_class="skulk.testing.echo.engine:EchoEngine",
    options=EchoOptions,
    probe_backend=never_advertised,
)

ECHO_ENTRY = f"{__name__}:ECHO"


def use_test_engines() -> None:
    """Register the echo engine for this process and every runner it starts (they inherit
    the environment): test fixtures and benches call it before starting runners or nodes."""
    entries = [e for e in os.environ.get(EXTRA_ENGINES_VARIABLE, "").split(",") if e]
    if ECHO_ENTRY not in entries:
        os.environ[EXTRA_ENGINES_VARIABLE] = ",".join([*entries, ECHO_ENTRY])
