"""A whole node on the in-memory bus, with the echo test engine in real runner processes.

The same path as production (API → master → worker → runner → data plane → API), fast.
"""

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import openai
import pytest

from skulk.api.instance_view import has_ready_instance
from skulk.node import Node
from skulk.node_config import NodeConfig
from skulk.routing.memory import MemoryBus, MemoryTransport
from skulk.shared.types.ids import ModelId
from skulk.testing.ports import free_port
from skulk.testing.runners import echo_instead

echo_supervisor = echo_instead(delay=0.01)


@pytest.fixture
async def node(tmp_path: Path) -> AsyncIterator[Node]:
    config = NodeConfig(data_dir=tmp_path, api_port=free_port(), serve=["smollm2-135m"])
    node = Node(config, MemoryTransport(MemoryBus()), supervisor_factory=echo_supervisor)
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(node.run)
        with anyio.fail_after(20):
            await node.ready.wait()
            async with httpx.AsyncClient() as client:
                while True:
                    try:
                        await client.get(f"{url(node)}/healthz")
                        break
                    except httpx.TransportError:
                        await anyio.sleep(0.05)
            await node.replica.wait_for(
                lambda s: has_ready_instance(s, ModelId("smollm2-135m")), 20)
        yield node
        tasks.cancel_scope.cancel()


def url(node: Node) -> str:
    return f"http://127.0.0.1:{node.config.api_port}"


def client(node: Node) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=f"{url(node)}/v1", api_key="unused", max_retries=0)


MESSAGES: Any = [{"role": "user", "content": "one two three four"}]


@pytest.mark.anyio
async def test_chat_streams_and_completes_through_the_whole_node(node: Node) -> None:
    async with client(node) as openai_client:
        await _chat_streams_and_completes(node, openai_client)


async def _chat_streams_and_completes(node: Node, openai_client: openai.AsyncOpenAI) -> None:
    reply = await openai_client.chat.completions.create(model="smollm2-135m", messages=MESSAGES)
    assert reply.choices[0].message.content == "one two three four"
    assert reply.usage is not None and reply.usage.completion_tokens == 4
    stream = await openai_client.chat.completions.create(
        model="smollm2-135m", messages=MESSAGES, stream=True,
        stream_options={"include_usage": True})
    pieces = [c.choices[0].delta.content async for c in stream if c.choices]
    assert "".join(p or "" for p in pieces) == "one two three four"
    with anyio.fail_after(5):
        while node.replica.state.tasks:
            await anyio.sleep(0.02)  # TaskFinished made the master forget both tasks


@pytest.mark.anyio
async def test_stop_max_tokens_and_errors(node: Node) -> None:
    async with client(node) as openai_client:
        await _stop_max_tokens_and_errors(node, openai_client)


async def _stop_max_tokens_and_errors(node: Node, openai_client: openai.AsyncOpenAI) -> None:
    reply = await openai_client.chat.completions.create(
        model="smollm2-135m", messages=MESSAGES, max_tokens=2)
    assert reply.choices[0].message.content == "one two"
    assert reply.choices[0].finish_reason == "length"
    reply = await openai_client.chat.completions.create(
        model="smollm2-135m", messages=MESSAGES, stop=[" three"])
    assert reply.choices[0].message.content == "one two"
    with pytest.raises(openai.NotFoundError):
        await openai_client.chat.completions.create(model="nope", messages=MESSAGES)
    with pytest.raises(openai.BadRequestError, match="temperature"):
        await openai_client.chat.completions.create(
            model="smollm2-135m", messages=MESSAGES, temperature=5)
    async with httpx.AsyncClient() as http:
        response = await http.post(f"{url(node)}/v1/chat/completions", content=b"{",
                                   headers={"content-type": "application/json"})
        assert response.status_code == 400 and "JSON" in response.json()["error"]["message"]


@pytest.mark.anyio
async def test_instances_can_be_placed_inspected_and_deleted(node: Node) -> None:
    async with httpx.AsyncClient(base_url=url(node), timeout=30) as http:
        state = (await http.get("/state")).json()
        [instance_id] = state["instances"]
        body = (await http.get(f"/instance/{instance_id}")).json()
        assert body["status"] == "ready" and body["ranks"][0]["end_layer"] == 30
        with anyio.fail_after(10):
            while True:  # the capability card rides the next telemetry reading
                [me] = (await http.get("/cluster")).json()["nodes"]
                if me["warm"]:
                    break
                await anyio.sleep(0.2)
        assert me["warm"][0]["model_id"] == "smollm2-135m" and me["warm"][0]["role"] == "whole"
        assert me["health"] in ("ok", "warn") and me["alive"]
        assert me["gpus"] == []  # this machine has no GPU
        assert node.node_id in (await http.get("/state")).json()["node_health"]
        assert (await http.get("/instance/nope")).status_code == 404
        assert (await http.delete(f"/instance/{instance_id}")).json() == {"deleted": instance_id}
        placed = await http.post("/place_instance", json={"model_id": "smollm2-135m"})
        assert placed.status_code == 201
        refused = await http.post("/place_instance", json={"model_id": "smollm2-135m",
                                                            "min_nodes": 2})
        assert refused.status_code == 400 and "min_nodes" in refused.json()["error"]["message"]
        assert (await http.post("/place_instance", json={"model_id": "x"})).status_code == 404
