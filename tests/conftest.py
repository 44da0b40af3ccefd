from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.node_process import NodeProcess, serving_bundled_model


@pytest.fixture(scope="session")
def serving_node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NodeProcess]:
    """One real node serving the bundled model, shared by a module's tests."""
    with serving_bundled_model(tmp_path_factory.mktemp("node")) as node:
        yield node


@pytest.fixture(scope="session")
def mlx_models(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A model store the session's MLX tests share: `bundled_mlx_model(mlx_models, q_bits)`
    imports the bundled model into it on first use and returns that copy after (the import
    is seconds of CPU, repeated by every module and node otherwise)."""
    return tmp_path_factory.mktemp("mlx-models")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if Path(str(item.fspath)).parent.name == "tests":
            item.add_marker(pytest.mark.integration)
