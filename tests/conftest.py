import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.node_process import NodeProcess, serving_bundled_model

# The processes these tests start (MLX ranks beside `make test`'s preloaded OpenBLAS, and
# anything else that does not say how many threads) run OpenBLAS on one thread: its
# threads spin while they wait for each other, and two of them in each of three ranks on a
# 2-core machine shared with pytest's other workers mostly waited. Runners still get the
# threads their config names (worker/engines/mlx/cpu.py).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


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


@pytest.fixture(scope="module")
def trio(tmp_path_factory: pytest.TempPathFactory,
         mlx_models: Path) -> Iterator[list[NodeProcess]]:
    """Three nodes serving the bundled model with MLX (tests/mlx_trio.py), one set a module:
    the MLX cluster modules run on different workers at once."""
    from tests.mlx_trio import started_trio  # MLX only where a test asks for it

    with started_trio(tmp_path_factory.mktemp("mlx-trio"), mlx_models) as nodes:
        yield nodes


@pytest.fixture(scope="session")
def whole_embeddings(mlx_models: Path) -> list[list[float]]:
    """The vectors the whole model gives in this process (the nodes' copy of it)."""
    from tests.mlx_forced_tools import whole_model_embeddings

    return whole_model_embeddings(mlx_models)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


# The integration modules that take longest on one worker, longest first (--durations,
# one module at a time, 2026-11-28 on a loaded 2-core machine: 742, 267, ~135, ~106, ~80,
# ~79 and ~77 s): in CI's 16-minute pass on workers, tests/test_mlx_cluster.py started
# 7-8 minutes in, as one of the last files collected, and ran to the pass's end. Its tests
# by heads then moved to tests/test_mlx_heads_cluster.py, on a trio of their own, so the
# two halves run side by side (547 s as one module at load 10-14; 424 and 328 s as two,
# both at once on two workers, 472 s in all). Measured again at load 7-9 the same day:
# test_chaos.py 271 s, test_speculative_cluster.py 280 s, test_speculative.py 174 s.
LONGEST_FIRST = ("test_mlx_cluster.py", "test_mlx_heads_cluster.py", "test_chaos.py",
                 "test_speculative_cluster.py", "test_speculative.py",
                 "test_cluster_trust.py", "test_mlx_tensor_fidelity.py",
                 "test_cluster_processes.py", "test_llama_rpc_cluster.py")


@pytest.hookimpl(tryfirst=True)  # the integration mark before `-m` deselects by it
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every module here is an integration test. They run first, the longest first, and
    the unit tests after them: `make test` hands pytest-xdist's workers whole files in
    this order (`--dist loadfile --no-loadscope-reorder`), so a long module starts at
    once instead of last (where it ended the whole pass), the unit tests fill the workers
    in at the end, and a module's module-scoped nodes start once (`--dist load` split a
    module between workers, each starting them)."""
    for item in items:
        if Path(str(item.fspath)).parent.name == "tests":
            item.add_marker(pytest.mark.integration)
    items.sort(key=_start_order)  # stable: each module keeps its own order


def _start_order(item: pytest.Item) -> int:
    path = Path(str(item.fspath))
    if path.parent.name != "tests":
        return len(LONGEST_FIRST) + 1
    if path.name in LONGEST_FIRST:
        return LONGEST_FIRST.index(path.name)
    return len(LONGEST_FIRST)
