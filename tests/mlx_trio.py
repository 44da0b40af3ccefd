"""Three real `skulk run` processes on 127.0.0.1 that serve the bundled model with MLX
(tests/conftest.py's `trio`: one per module, so the MLX cluster modules run side by side on
pytest-xdist's workers instead of one after another)."""

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from skulk.worker.engines.mlx.corruption_guard import INJECT_NAN_VARIABLE
from tests.node_process import NodeProcess
from tests.speculative_support import import_models, seed_store


@contextmanager
def started_trio(root: Path, mlx_models: Path) -> Iterator[list[NodeProcess]]:
    """Nodes a, b and c, started, observing each other; stopped on exit. B and C hold the
    session's imports (fp32, and the 4-bit copy the card drafts with); A imports both on
    first use, as a real node does. Every rank may corrupt one hop when a test writes its
    rank into `root / "inject-nan"`."""
    imported = import_models(mlx_models)
    for name in ("b", "c"):
        seed_store(root / name, *imported)
    namespace = f"mlx-trio-{time.monotonic_ns()}"
    authority = root / "authority"
    first = NodeProcess(root / "a", "--namespace", namespace, "--no-auto-place",
                        authority=authority)
    others = [NodeProcess(root / name, "--namespace", namespace, "--no-auto-place",
                          "--peer", f"tcp/127.0.0.1:{first.transport_port}",
                          authority=authority)
              for name in ("b", "c")]
    nodes = [first, *others]
    try:
        os.environ[INJECT_NAN_VARIABLE] = str(root / "inject-nan")
        try:
            for node in nodes:
                node.start()
        finally:
            del os.environ[INJECT_NAN_VARIABLE]
        first.wait_until(lambda: fully_observed(first, 3), 60.0,
                         "three nodes that observe each other")
        yield nodes
    finally:
        for node in nodes:
            if node.process is not None and node.process.poll() is None:
                node.stop()


def fully_observed(node: NodeProcess, count: int) -> bool:
    summary = node.cluster()
    alive = [n for n in summary["nodes"] if n["alive"] and n["has_worker"]]
    return len(alive) == count and all(
        len(n.get("reachable_peers", [])) == count - 1 for n in alive)
