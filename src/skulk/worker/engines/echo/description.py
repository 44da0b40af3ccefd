"""The echo engine as the rest of Skulk sees it. Never advertised or placed: tests hand
it to a runner by name."""

from collections.abc import Sequence

from pydantic import Field

from skulk.shared.types.telemetry import GpuDevice
from skulk.worker.engines.description import EngineDescription, EngineOptions


class EchoOptions(EngineOptions):
    """Knobs for tests of the runner path."""

    delay: float = Field(default=0, ge=0)
    """Seconds per token."""
    crash_at: int = Field(default=0, ge=0)
    """The token at which the whole process exits abruptly (0: never)."""
    fail_load: bool = False
    """Fail on load."""
    ignore_sigterm: bool = False
    """Ignore SIGTERM, so teardown must escalate."""


def never_advertised(_platform: str, _gpus: Sequence[GpuDevice]) -> None:
    """Telemetry never claims the echo engine."""
    return None


ECHO = EngineDescription(
    name="echo",
    engine_class="skulk.worker.engines.echo.engine:EchoEngine",
    options=EchoOptions,
    weight_format="gguf",  # it loads nothing; tests run it in place of llama.cpp
    overhead_factor=1.0,
    kv_bytes_per_value=0,
    probe_backend=never_advertised,
)
