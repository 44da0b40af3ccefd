"""Admission on a whole node (in-memory bus, echo engine in real runners): a bounded
queue, 429 with Retry-After beyond it, and a client that leaves while queued."""

import anyio
import httpx
import openai
import pytest

from skulk.cluster.cluster_test import MODEL, Cluster, cluster
from skulk.cluster.failover_test import echo
from skulk.master.admission import concurrency
from skulk.node import Node
from skulk.testing import factories as f
from skulk.worker.engines.node_options import parse_node_engine_options

__all__ = ["cluster"]  # the fixture

WORDS = " ".join(f"w{index}" for index in range(20))
BODY = {"model": MODEL, "stream": True, "messages": [{"role": "user", "content": WORDS}]}


async def one_request(url: str) -> tuple[int, str | None, str]:
    """Status, Retry-After and streamed text of one streamed chat."""
    async with httpx.AsyncClient(timeout=60) as client, \
            client.stream("POST", f"{url}/v1/chat/completions", json=BODY) as response:
        text = "".join([line async for line in response.aiter_lines()])
        return response.status_code, response.headers.get("retry-after"), text


def unfinished(node: Node) -> int:
    return sum(1 for t in node.replica.state.tasks.values()
               if t.status in ("pending", "running"))


@pytest.mark.anyio
async def test_a_full_queue_answers_429_and_a_queued_client_that_leaves_frees_its_slot(
        cluster: Cluster) -> None:
    # A llama.cpp instance runs 4 requests at once: with --max-queue 1, five fit.
    a = await cluster.start("a", serve=[MODEL], max_queue=1, supervisor=echo(0))
    await cluster.ready(a)
    url = f"http://127.0.0.1:{a.config.api_port}"
    results: list[tuple[int, str | None, str]] = []

    async def request() -> None:
        results.append(await one_request(url))

    with anyio.fail_after(60):  # none hangs
        async with anyio.create_task_group() as tasks:
            for _ in range(20):  # 4x the bound
                tasks.start_soon(request)
    accepted = [r for r in results if r[0] == 200]
    refused = [r for r in results if r[0] == 429]
    assert len(accepted) + len(refused) == 20 and len(refused) >= 12, results
    assert all(r[1] is not None and int(r[1]) >= 1 for r in refused)
    assert all("rate_limit_exceeded" in r[2] for r in refused)
    assert all("w19" in r[2] and "[DONE]" in r[2] for r in accepted)  # complete answers

    # One request runs, a second queues; its client leaves before its first token.
    async with openai.AsyncOpenAI(base_url=f"{url}/v1", api_key="x", max_retries=0) as client:
        running = await client.chat.completions.create(
            model=MODEL, stream=True, messages=[{"role": "user", "content": WORDS * 20}])
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(one_request, url)
            with anyio.fail_after(10):
                while unfinished(a) != 2:  # the queued one is counted
                    await anyio.sleep(0.05)
            tasks.cancel_scope.cancel()  # its client goes away
        with anyio.fail_after(1.5):  # within a second (one poll) of leaving
            while unfinished(a) != 1:
                await anyio.sleep(0.05)
        await running.close()


@pytest.mark.anyio
async def test_the_master_sees_what_each_nodes_runners_batch(cluster: Cluster) -> None:
    """A node's `--engine-option llama_cpp.max_batch` and `shared_kv`, and its
    `--no-batching`, reach the master in its readings, where admission and placement read
    them."""
    a = await cluster.start("a", force_master=True)
    b = await cluster.start("b", engine_options=parse_node_engine_options(
        ["llama_cpp.max_batch=8", "llama_cpp.shared_kv=off"]), batching=False)
    await cluster.converged()
    with anyio.fail_after(20):
        while b.node_id not in a.telemetry.live():
            await anyio.sleep(0.05)
    seen = a.telemetry.live()[b.node_id]
    assert seen.batch_sizes["llama_cpp"] == 8 and not seen.batching
    assert seen.kv_contexts["llama_cpp"] == 8  # each sequence's cells its own
    own = a.telemetry.live()[a.node_id]
    assert own.batch_sizes["llama_cpp"] == 4 and own.kv_contexts["llama_cpp"] == 1
    on_b = f.instance(node=b.node_id)
    assert concurrency(on_b, a.telemetry.live()) == 1  # whole on b: one at a time
