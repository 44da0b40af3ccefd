from collections.abc import Callable
from pathlib import Path

import pytest

from skulk.testing.tiny_model import write_tiny_model
from skulk.worker.engines.mlx.engine import MlxEngine
from skulk.worker.engines.mlx.options import MlxOptions
from skulk.worker.engines.protocol import EngineConfig

EngineFactory = Callable[..., MlxEngine]


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_tiny_model(tmp_path_factory.mktemp("tiny-llama"))


@pytest.fixture
def make_engine(tiny_model_dir: Path) -> EngineFactory:
    """A loaded engine over the tiny model; options as keyword arguments."""

    def make(limit: int = 512, **options: str) -> MlxEngine:
        engine = MlxEngine(EngineConfig(model_path=str(tiny_model_dir),
                                        context_token_limit=limit,
                                        options=MlxOptions.parse(options)))
        engine.load()
        return engine

    return make
