"""Engines by name. Paths are imported lazily, so only a runner loads its engine."""

import importlib
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from skulk.worker.engines.protocol import Engine, EngineConfig

ENGINES: dict[str, str] = {
    "llama_cpp": "skulk.worker.engines.llama_cpp.engine:LlamaCppEngine",
    "echo": "skulk.worker.engines.echo:EchoEngine",
    "mlx": "skulk.worker.engines.mlx.engine:MlxEngine",
}

# Engines that want variables in their runner's environment before it starts (a preloaded
# library, thread counts): `module:function` taking the EngineConfig, returning a dict.
# These modules must not import the engine itself: the node process calls them.
RUNNER_ENVIRONMENTS: dict[str, str] = {
    "mlx": "skulk.worker.engines.mlx.cpu:runner_environment",
}


def register_engine(name: str, path: str) -> None:
    """Register `module:Class`, a class taking an `EngineConfig`."""
    ENGINES[name] = path


def create_engine(name: str, config: EngineConfig) -> Engine:
    path = ENGINES.get(name)
    if path is None:
        raise ValueError(f"unknown engine {name!r}; known engines: {', '.join(sorted(ENGINES))}")
    module_name, _, class_name = path.partition(":")
    engine_class = getattr(importlib.import_module(module_name), class_name)
    engine: Engine = engine_class(config)
    return engine


def runner_environment(name: str, config: EngineConfig) -> dict[str, str]:
    """Environment variables a runner of this engine must start with (often none)."""
    path = RUNNER_ENVIRONMENTS.get(name)
    if path is None:
        return {}
    module_name, _, function_name = path.partition(":")
    environment: dict[str, str] = getattr(importlib.import_module(module_name),
                                          function_name)(config)
    return environment


_environment_lock = threading.Lock()


@contextmanager
def spawn_environment(name: str, config: EngineConfig) -> Iterator[None]:
    """Within this block, processes started (spawned) inherit the engine's runner
    environment; the node's own environment is restored after."""
    extra = runner_environment(name, config)
    if not extra:
        yield
        return
    with _environment_lock:
        saved = {key: os.environ.get(key) for key in extra}
        os.environ.update(extra)
        try:
            yield
        finally:
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value
