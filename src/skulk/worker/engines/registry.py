"""Engines by name. Paths are imported lazily, so only a runner loads its engine."""

import importlib

from skulk.worker.engines.protocol import Engine, EngineConfig

ENGINES: dict[str, str] = {
    "llama_cpp": "skulk.worker.engines.llama_cpp.engine:LlamaCppEngine",
    "echo": "skulk.worker.engines.echo:EchoEngine",
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
