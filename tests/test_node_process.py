"""The test harness's own node start: an API port taken between choosing and binding it
is replaced, and the node starts on another (free_port cannot hold a port for a child)."""

import socket
from pathlib import Path

import pytest

from tests.node_process import NodeProcess

pytestmark = pytest.mark.integration


def test_a_node_whose_api_port_was_taken_starts_on_another(tmp_path: Path) -> None:
    node = NodeProcess(tmp_path / "a", "--no-worker")
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", node.api_port))
        squatter.listen(1)
        taken = node.api_port
        node.start()
        try:
            assert node.api_port != taken
            assert node.get("/healthz").status_code == 200
            assert f"API port {taken} is already in use" in node.log()
        finally:
            node.stop()
