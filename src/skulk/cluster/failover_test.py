"""A request whose runner dies mid-stream goes on elsewhere: two whole nodes on the
in-memory bus, the echo engine in real runner processes."""

from collections.abc import Awaitable, Callable
from typing import Any

import anthropic
import anyio
import httpx
import ollama
import openai
import pytest

from skulk.cluster.cluster_test import MODEL, Cluster, cluster, place
from skulk.node import Node
from skulk.testing.runners import echo_instead

__all__ = ["cluster"]  # the fixture

WORDS = " ".join(f"w{index}" for index in range(40))


def echo(crash_at: int) -> Any:
    """Echo runners that answer a word every 20 ms and, with `crash_at`, die on that word."""
    return echo_instead(delay=0.02, crash_at=crash_at)


async def served_by_a_runner_that_dies(cluster: Cluster) -> Node:
    """Nodes a and b, the model placed on b, whose runners die on word 15; a takes requests."""
    a = await cluster.start("a", force_master=True, supervisor=echo(0))
    b = await cluster.start("b", supervisor=echo(crash_at=15))
    await cluster.converged()
    await place(b, MODEL, excluded=[a.node_id])
    await cluster.ready(a)
    return a


@pytest.mark.anyio
async def test_a_runner_dying_mid_stream_costs_a_pause_not_the_answer(
        cluster: Cluster) -> None:
    a = await served_by_a_runner_that_dies(cluster)
    a.traces.enabled = True
    url = f"http://127.0.0.1:{a.config.api_port}/v1"
    async with openai.AsyncOpenAI(base_url=url, api_key="x", max_retries=0) as client:
        with anyio.fail_after(60):
            stream = await client.chat.completions.create(
                model=MODEL, stream=True, stream_options={"include_usage": True},
                messages=[{"role": "user", "content": WORDS}])
            parts, usage = [], None
            async for event in stream:
                if event.choices:
                    parts.append(event.choices[0].delta.content or "")
                usage = event.usage or usage
    assert "".join(parts) == WORDS  # no word lost, none repeated
    assert usage is not None and usage.completion_tokens == 40
    # It went on in a new instance on a: b's runner failed there, so b was not used again.
    [instance] = [i for i in a.replica.state.instances.values()
                  if all(s.node_id == a.node_id for s in i.shards.values())]
    assert instance.model_id == MODEL
    async with httpx.AsyncClient() as http:
        metrics = (await http.get(f"http://127.0.0.1:{a.config.api_port}/metrics")).text
    assert 'skulk_failovers_total{reason="runner_failed"} 1.0' in metrics
    [trace] = a.traces.all()  # the pause is in the request's trace, with its reason
    assert [s.name for s in trace.spans if "failover" in s.name] == [
        "api.failover.runner_failed"]
    assert trace.outcome == "stop" and trace.tokens == 40


async def anthropic_text(url: str) -> str:
    async with anthropic.AsyncAnthropic(base_url=url, api_key="x", max_retries=0) as client:
        parts = []
        async with client.messages.stream(
                model=MODEL, max_tokens=100,
                messages=[{"role": "user", "content": WORDS}]) as stream:
            async for text in stream.text_stream:
                parts.append(text)
        return "".join(parts)


async def ollama_text(url: str) -> str:
    parts = []
    async for part in await ollama.AsyncClient(host=url).chat(
            model=MODEL, stream=True, messages=[{"role": "user", "content": WORDS}]):
        parts.append(part.message.content or "")
    return "".join(parts)


@pytest.mark.anyio
@pytest.mark.parametrize("stream_text", [anthropic_text, ollama_text],
                         ids=["anthropic", "ollama"])
async def test_every_dialect_fails_over_the_same_way(
        cluster: Cluster, stream_text: Callable[[str], Awaitable[str]]) -> None:
    a = await served_by_a_runner_that_dies(cluster)
    with anyio.fail_after(60):
        assert await stream_text(f"http://127.0.0.1:{a.config.api_port}") == WORDS


@pytest.mark.anyio
async def test_losing_the_node_under_several_streams_finishes_each_of_them(
        cluster: Cluster) -> None:
    """Three streams in flight on b when b leaves the cluster: each goes on in one new
    instance on a and ends whole (no word lost or repeated), none hangs, and the model is
    placed once, not once per stream."""
    a = await cluster.start("a", force_master=True, supervisor=echo(0))
    b = await cluster.start("b", supervisor=echo(0))
    await cluster.converged()
    await place(b, MODEL, excluded=[a.node_id])
    await cluster.ready(a)
    url = f"http://127.0.0.1:{a.config.api_port}/v1"
    texts: list[str] = []
    under_way: set[int] = set()

    async def stream(index: int) -> None:
        async with openai.AsyncOpenAI(base_url=url, api_key="x", max_retries=0) as client:
            events = await client.chat.completions.create(
                model=MODEL, stream=True, messages=[{"role": "user", "content": WORDS}])
            parts: list[str] = []
            async for event in events:
                if event.choices:
                    parts.append(event.choices[0].delta.content or "")
                if len("".join(parts).split()) >= 3:
                    under_way.add(index)
            texts.append("".join(parts))

    with anyio.fail_after(90):
        async with anyio.create_task_group() as tasks:
            for index in range(3):
                tasks.start_soon(stream, index)
            while len(under_way) < 3:
                await anyio.sleep(0.01)
            await cluster.kill("b")
    assert texts == [WORDS] * 3
    # One new instance for the three (b's is removed once its grace runs out).
    placed_again = [[s.node_id for s in i.shards.values()]
                    for i in a.replica.state.instances_of(MODEL)
                    if all(s.node_id != b.node_id for s in i.shards.values())]
    assert placed_again == [[a.node_id]]
