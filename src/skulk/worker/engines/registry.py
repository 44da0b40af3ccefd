"""Engines by name: one line per engine, each described in its own folder. The worker,
telemetry, the node and the runner read this (placement reads only the engines' fits,
`skulk/fitting/engines.py`); only a runner imports an engine itself.

Engines for tests only (the echo engine in `skulk.testing`) are never imported from here:
a test names their descriptions in `$SKULK_EXTRA_ENGINES` (`module:ATTRIBUTE`, comma
separated), and `engine_description` imports them on first use. Runners inherit the
variable, so a runner started by such an engine's name finds it too. They are never
advertised or placed, and the wire type (`EngineName`) does not name them.
"""

import functools
import importlib
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from skulk.fitting import engines as fitting_engines
from skulk.worker.engines.description import EngineDescription
from skulk.worker.engines.llama_cpp.description import LLAMA_CPP
from skulk.worker.engines.mlx.description import MLX
from skulk.worker.engines.protocol import EngineConfig

_DESCRIBED: dict[str, EngineDescription] = {engine.name: engine for engine in (LLAMA_CPP, MLX)}

PLACEABLE: tuple[EngineDescription, ...] = tuple(
    _DESCRIBED[fit.name] for fit in fitting_engines.PLACEABLE)
"""The placeable engines' descriptions, in placement's preference order (the fits' order
in `fitting/engines.py`, which also names the engines the wire type does)."""

ENGINES: dict[str, EngineDescription] = {engine.name: engine for engine in PLACEABLE}

EXTRA_ENGINES_VARIABLE = "SKULK_EXTRA_ENGINES"


@functools.cache
def _extra_engines(entries: str) -> dict[str, EngineDescription]:
    """The descriptions `$SKULK_EXTRA_ENGINES` names, imported now."""
    extra: dict[str, EngineDescription] = {}
    for entry in filter(None, (part.strip() for part in entries.split(","))):
        module_name, colon, attribute = entry.partition(":")
        found = getattr(importlib.import_module(module_name), attribute, None) if colon else None
        if not isinstance(found, EngineDescription):
            raise ValueError(f"{EXTRA_ENGINES_VARIABLE} entry {entry!r} names no engine "
                             "description; write module:ATTRIBUTE")
        extra[found.name] = found
    return extra


def known_engines() -> dict[str, EngineDescription]:
    """Every engine a runner may be started with: the product's and any a test added."""
    return {**_extra_engines(os.environ.get(EXTRA_ENGINES_VARIABLE, "")), **ENGINES}


def engine_description(name: str) -> EngineDescription:
    """The engine called `name`, or a ValueError listing the known ones."""
    engines = known_engines()
    engine = engines.get(name)
    if engine is None:
        raise ValueError(f"unknown engine {name!r}; known engines: {', '.join(sorted(engines))}")
    return engine


def runner_environment(name: str, config: EngineConfig) -> dict[str, str]:
    """Environment variables a runner of this engine must start with (often none)."""
    return engine_description(name).runner_environment(config)


def native_versions() -> dict[str, str | None]:
    """The native library versions the installed engines carry (`Versions` fields)."""
    return {name: version for engine in PLACEABLE
            for name, version in engine.native_versions().items()}


_environment_lock = threading.Lock()


@contextmanager
def spawn_environment(engine: EngineDescription, config: EngineConfig) -> Iterator[None]:
    """Within this block, processes started (spawned) inherit the engine's runner
    environment; the node's own environment is restored after."""
    extra = engine.runner_environment(config)
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
