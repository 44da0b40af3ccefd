"""The runner environment: OpenBLAS preloaded when present, thread counts, and the
environment reaching a spawned child without leaking into the node."""

import dataclasses
import multiprocessing
import os
from pathlib import Path

from skulk.testing.echo.description import ECHO
from skulk.worker.engines import registry
from skulk.worker.engines.mlx.cpu import runner_environment
from skulk.worker.engines.mlx.options import MlxOptions
from skulk.worker.engines.protocol import EngineConfig


def config(threads: int | None = None, **options: str) -> EngineConfig:
    return EngineConfig(model_path="m", context_token_limit=8, n_threads=threads,
                        options=MlxOptions.parse(options))


def test_openblas_is_preloaded_when_present_and_threads_are_pinned(tmp_path: Path) -> None:
    library = tmp_path / "libblas.so.3"
    library.write_bytes(b"")
    environment = runner_environment(config(threads=2), openblas=library)
    assert environment["LD_PRELOAD"].split(":")[-1] == str(library)
    assert environment["OPENBLAS_NUM_THREADS"] == "2"


def test_nothing_is_preloaded_without_openblas_or_when_turned_off(tmp_path: Path) -> None:
    assert "LD_PRELOAD" not in runner_environment(config(), openblas=tmp_path / "absent.so")
    library = tmp_path / "libblas.so.3"
    library.write_bytes(b"")
    assert runner_environment(config(openblas="off"), openblas=library) == {}


def test_only_engines_that_ask_get_an_environment() -> None:
    assert registry.runner_environment("llama_cpp", config(threads=2)) == {}
    assert registry.runner_environment("mlx", config(threads=3))["OPENBLAS_NUM_THREADS"] == "3"


def _report(out: "multiprocessing.Queue[str | None]") -> None:
    out.put(os.environ.get("SKULK_ENV_PROBE"))


def test_a_spawned_child_sees_the_environment_and_the_node_does_not_keep_it() -> None:
    probe = dataclasses.replace(ECHO, fit=dataclasses.replace(ECHO.fit, name="env-probe"),
                                runner_environment=_probe_environment)
    context = multiprocessing.get_context("spawn")
    out: multiprocessing.Queue[str | None] = context.Queue()
    child = context.Process(target=_report, args=(out,))
    with registry.spawn_environment(probe, config()):
        child.start()
    assert out.get(timeout=30) == "yes"
    child.join(10)
    assert "SKULK_ENV_PROBE" not in os.environ


def _probe_environment(_config: EngineConfig) -> dict[str, str]:
    return {"SKULK_ENV_PROBE": "yes"}
