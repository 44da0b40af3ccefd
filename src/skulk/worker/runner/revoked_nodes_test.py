"""A runner told the node's revocation list changed hands it to its ggml RPC channel (the
links themselves: tests/test_ggml_rpc_secure_channel.py). No process: the echo engine runs
in this one."""

import os
import pickle
from collections.abc import Set
from typing import cast

import pytest

from skulk.shared.types.ids import NodeId
from skulk.testing.echo.description import ECHO, EchoOptions
from skulk.worker import rpc_channel
from skulk.worker.engines.protocol import EngineConfig
from skulk.worker.runner import messages
from skulk.worker.runner.bootstrap import Runner
from skulk.worker.runner.messages import TO_RUNNER, FromRunner
from skulk.worker.runner.pipe_frames import FrameWriter
from skulk.worker.runner.runner_inbox import RunnerInbox


def test_revoked_nodes_cross_the_inbox_and_reach_the_channel(
        monkeypatch: pytest.MonkeyPatch) -> None:
    handed: list[Set[NodeId]] = []

    def set_revoked(nodes: Set[NodeId]) -> int:
        handed.append(nodes)
        return 0
    monkeypatch.setattr(rpc_channel, "set_revoked", set_revoked)
    message = messages.RevokedNodes(nodes=[NodeId("node-a"), NodeId("node-b")])
    assert TO_RUNNER(pickle.loads(pickle.dumps(message))) == message
    read_end, write_end = os.pipe()
    config = EngineConfig(model_path="unused", context_token_limit=64, options=EchoOptions())
    runner = Runner(ECHO, config, RunnerInbox(read_end), cast(FrameWriter[FromRunner], None))
    runner._dispatch(message)  # before the engine loads, and after
    runner._load()
    runner._dispatch(messages.RevokedNodes(nodes=[]))
    assert handed == [frozenset({"node-a", "node-b"}), frozenset()]
    assert not runner._shutdown
    os.close(read_end)
    os.close(write_end)
