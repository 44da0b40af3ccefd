"""The llama-server comparison's turns on real processes: a Skulk node and its runner,
frozen with SIGSTOP for longer than any of the node's deadlines on a running request,
serve the next request on the same runner once continued; the engine alone, kept up
behind a bare HTTP socket, streams to the `openai` client prompt after prompt across a
freeze, and refuses what it does not serve without stopping."""

import os
import subprocess
import sys
import time
from pathlib import Path

import openai
import psutil
import pytest

REPOSITORY = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPOSITORY))

from bench.llama_server_compare import stream  # noqa: E402
from bench.server_turns import (  # noqa: E402
    SETTLE_SECONDS,
    Contender,
    CpuMeter,
    engine_alone,
    pinned,
    process_tree,
    skulk_server,
    thawed_on_exit,
    turn,
    wait_node_idle,
)

from skulk.testing.models import bundled_gguf  # noqa: E402
from skulk.worker.runner.deadlines import STALL_SECONDS  # noqa: E402


def stopped(pids: list[int]) -> bool:
    return all(psutil.Process(pid).status() == psutil.STATUS_STOPPED for pid in pids)


def runners(node: int) -> list[int]:
    return [pid for pid in process_tree(node)
            if "spawn_main" in " ".join(psutil.Process(pid).cmdline())]


def test_a_skulk_node_frozen_past_its_stall_deadline_serves_on_with_the_same_runner(
        ) -> None:
    with skulk_server(True, threads=1) as (url, model, pids):
        client = openai.OpenAI(base_url=url, api_key="unused", max_retries=0, timeout=120)
        node = Contender("skulk", lambda prompt, tokens: stream(client, model, prompt, tokens),
                         [pids["node"]], CpuMeter(pids),
                         idle=lambda: wait_node_idle(url.removesuffix("/v1")))
        with thawed_on_exit([node]):
            # An answer that ends on its own: Skulk's usage counts its text's tokens, so
            # a server said to count the end token too is one token less by that count.
            counted = stream(client, model, "What is 2+2?", 32)
            assert 0 < counted.tokens < 32
            assert stream(client, model, "What is 2+2?", 32,
                          counts_end_token=True).tokens == counted.tokens - 1
            # Cut by the length limit, nothing is taken off.
            assert stream(client, model, "What is 2+2?", 3, counts_end_token=True) \
                .tokens == 3
            before = runners(pids["node"])
            node.freeze()
            assert pids["runner"] in node.held and stopped(node.held)
            # Past the runner's stall deadline and the client's and server's keep-alive:
            # a timer that counted the freeze would kill the runner or drop the request.
            time.sleep(STALL_SECONDS + 5)
            held = node.held
            with turn(node):  # thawed, settled, primed with a request of its own
                assert not node.frozen and not stopped(held)
                sample = node.ask("Name three colours.", 16)
            assert node.frozen
        assert not node.frozen
        assert sample.tokens > 0
        assert runners(pids["node"]) == before == [pids["runner"]]  # none replaced


def test_the_engine_alone_streams_to_the_openai_client_across_a_freeze() -> None:
    with engine_alone(bundled_gguf(), threads=1) as (url, model, pids):
        client = openai.OpenAI(base_url=url, api_key="unused", max_retries=0, timeout=120)
        engine = Contender("engine-alone",
                           lambda prompt, tokens: stream(client, model, prompt, tokens),
                           list(pids.values()), CpuMeter({}))
        with thawed_on_exit([engine]):
            first = engine.ask("Say hello.", 8)
            engine.freeze()
            assert engine.held == list(pids.values()) and stopped(engine.held)
            time.sleep(SETTLE_SECONDS)
            with turn(engine):
                second = engine.ask("Describe a bicycle.", 16)
                with pytest.raises(openai.BadRequestError, match="only streams"):
                    client.chat.completions.create(
                        model=model, messages=[{"role": "user", "content": "Hi"}],
                        max_tokens=4)
                third = engine.ask("Name a colour.", 8)  # a refusal leaves it serving
    assert first.tokens > 0 and first.ttft > 0
    assert 1 < second.tokens <= 16 and second.decode_tps > 0
    assert third.tokens > 0


def test_processes_started_while_pinned_keep_the_cores_and_the_thread_gets_its_own_back(
        ) -> None:
    every = os.sched_getaffinity(0)
    one = {min(every)}
    with pinned(one):
        child = subprocess.run([sys.executable, "-c", "import os; print(sorted("
                                "os.sched_getaffinity(0)))"], capture_output=True, text=True,
                               check=True)
    assert child.stdout.strip() == str(sorted(one))
    assert os.sched_getaffinity(0) == every
    with pinned(None):
        assert os.sched_getaffinity(0) == every
