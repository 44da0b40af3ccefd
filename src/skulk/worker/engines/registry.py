"""Engines by name: one line per engine, each described in its own folder. Placement, the
worker, telemetry and the runner all read this; only a runner imports an engine itself."""

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import get_args

from skulk.shared.types.model_cards import EngineName
from skulk.worker.engines.description import EngineDescription
from skulk.worker.engines.echo.description import ECHO
from skulk.worker.engines.llama_cpp.description import LLAMA_CPP
from skulk.worker.engines.mlx.description import MLX
from skulk.worker.engines.protocol import Engine, EngineConfig

# The engines placement may choose, in the order unpinned placements try them: llama.cpp
# decodes ~10x faster than MLX on CPU, so it wins whenever the model fits whole on one node.
PLACEABLE: tuple[EngineDescription, ...] = (LLAMA_CPP, MLX)

ENGINES: dict[str, EngineDescription] = {
    engine.name: engine for engine in (*PLACEABLE, ECHO)
}


_WIRE_NAMES: tuple[EngineName, ...] = get_args(EngineName)


def _wire_name(engine: EngineDescription) -> EngineName:
    """The engine's name as the wire type spells it; placement stamps it on instances."""
    for name in _WIRE_NAMES:
        if name == engine.name:
            return name
    raise TypeError(f"engine {engine.name!r} is placeable but the wire type EngineName "
                    "(shared/types/model_cards.py) does not name it; add it there")


ENGINE_PREFERENCE: tuple[EngineName, ...] = tuple(_wire_name(e) for e in PLACEABLE)


def engine_description(name: str) -> EngineDescription:
    """The engine called `name`, or a ValueError listing the known ones."""
    engine = ENGINES.get(name)
    if engine is None:
        raise ValueError(f"unknown engine {name!r}; known engines: {', '.join(sorted(ENGINES))}")
    return engine


def create_engine(name: str, config: EngineConfig) -> Engine:
    """The engine itself, imported now (only a runner calls this)."""
    return engine_description(name).create(config)


def runner_environment(name: str, config: EngineConfig) -> dict[str, str]:
    """Environment variables a runner of this engine must start with (often none)."""
    return engine_description(name).runner_environment(config)


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
