"""Several whole nodes in one process on the in-memory bus, echo engine in real runners."""

from collections.abc import AsyncIterator, Callable
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
from skulk.shared.types.ids import ModelId, NodeId, RunnerId
from skulk.testing.cluster_trust import make_member
from skulk.testing.ports import free_port
from skulk.testing.runners import echo_instead
from skulk.worker.runner.supervisor import RunnerSupervisor

MODEL = ModelId("smollm2-135m")



echo_supervisor = echo_instead()


def api(node: Node) -> httpx.AsyncClient:
    return httpx.AsyncClient(base_url=f"http://127.0.0.1:{node.config.api_port}", timeout=30)


async def place(node: Node, model: ModelId, excluded: list[NodeId]) -> None:
    """Place `model` through `node`'s API; a 503 (the nodes' memory not reported yet) is
    asked again."""
    async with api(node) as client:
        with anyio.fail_after(20):
            while True:
                reply = await client.post("/place_instance", json={
                    "model_id": model, "excluded_nodes": excluded})
                if reply.status_code != 503:
                    break
                await anyio.sleep(0.2)
    assert reply.status_code == 201, reply.text


async def runner_pid(node: Node, runner_id: RunnerId) -> int:
    """The pid of `runner_id` on `node`, from its diagnostics."""
    async with api(node) as client:
        reply = await client.get("/v1/diagnostics/node")
    [pid] = [r["pid"] for r in reply.json()["runners"] if r["runner_id"] == runner_id]
    assert isinstance(pid, int)
    return pid


class Cluster:
    def __init__(self, tasks: anyio.abc.TaskGroup, root: Path) -> None:
        self.bus = MemoryBus()
        self.tasks = tasks
        self.root = root
        self.nodes: dict[str, Node] = {}
        self.scopes: dict[str, anyio.CancelScope] = {}
        self.transports: dict[str, MemoryTransport] = {}

    async def start(self, name: str, namespace: str = "test", bus: MemoryBus | None = None,
                    supervisor: Callable[..., RunnerSupervisor] = echo_supervisor,
                    local_delivery: bool = True, **config: Any) -> Node:
        transport = MemoryTransport(bus or self.bus)
        await make_member(self.root / "authority", self.root / name)
        node = Node(NodeConfig(data_dir=self.root / name, api_port=free_port(),
                               namespace=namespace, election_timeout=0.3,
                               settle_grace_seconds=1.0, **config),
                    transport, supervisor_factory=supervisor, local_delivery=local_delivery)
        scope = anyio.CancelScope()

        async def run() -> None:
            with scope:
                await node.run()

        self.tasks.start_soon(run)
        self.nodes[name], self.scopes[name], self.transports[name] = node, scope, transport
        with anyio.fail_after(20):
            await node.ready.wait()
        return node

    async def kill(self, name: str) -> None:
        self.scopes.pop(name).cancel()
        del self.nodes[name]
        await self.transports.pop(name).close()

    async def converged(self, timeout: float = 20.0) -> NodeId:
        """One master that every node follows, and every replica in the same session."""
        with anyio.fail_after(timeout):
            while True:
                masters = {n.master_node for n in self.nodes.values()}
                sessions = {n.replica.session for n in self.nodes.values()}
                followed = {n.replica.master_node for n in self.nodes.values()}
                running = {n.node_id for n in self.nodes.values()}
                if len(masters) == 1 and masters == followed and masters <= running \
                        and None not in sessions and len(sessions) == 1:
                    master = masters.pop()
                    assert master is not None
                    return master
                await anyio.sleep(0.05)

    def name_of(self, node_id: NodeId) -> str:
        return next(n for n, node in self.nodes.items() if node.node_id == node_id)

    async def ready(self, node: Node, timeout: float = 20.0) -> None:
        with anyio.fail_after(timeout):
            while not has_ready_instance(node.replica.state, MODEL):
                await anyio.sleep(0.05)


async def chat(node: Node, text: str = "hello from the cluster") -> str:
    async with openai.AsyncOpenAI(base_url=f"http://127.0.0.1:{node.config.api_port}/v1",
                                  api_key="x", max_retries=0) as client:
        reply = await client.chat.completions.create(
            model=MODEL, messages=[{"role": "user", "content": text}])
        return reply.choices[0].message.content or ""


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[Cluster]:
    async with anyio.create_task_group() as tasks:
        yield Cluster(tasks, tmp_path)
        tasks.cancel_scope.cancel()


@pytest.mark.anyio
async def test_three_nodes_elect_one_master_and_any_node_serves_any_request(
        cluster: Cluster) -> None:
    for name in ("a", "b", "c"):
        await cluster.start(name)
    master = await cluster.converged()
    assert all(len(n.members.live) == 3 for n in cluster.nodes.values())
    a = cluster.nodes["a"]
    assert await chat(a) == "hello from the cluster"  # auto-placed somewhere
    for node in cluster.nodes.values():
        await cluster.ready(node)
        assert await chat(node, "served wherever it runs") == "served wherever it runs"
    states = [n.replica.state.instances for n in cluster.nodes.values()]
    assert states[0] == states[1] == states[2]
    assert await cluster.converged() == master


@pytest.mark.anyio
async def test_a_late_joiner_catches_up_to_the_same_state(cluster: Cluster) -> None:
    await cluster.start("a", serve=[MODEL])
    await cluster.start("b")
    await cluster.converged()
    await cluster.ready(cluster.nodes["a"])
    late = await cluster.start("c")
    await cluster.converged()
    with anyio.fail_after(10):
        while late.replica.state.instances != cluster.nodes["a"].replica.state.instances:
            await anyio.sleep(0.05)
    assert await chat(late) == "hello from the cluster"


@pytest.mark.anyio
async def test_master_death_elects_another_and_carried_runners_keep_serving(
        cluster: Cluster) -> None:
    await cluster.start("a", force_master=True)
    await cluster.start("b", run_worker=True)
    await cluster.start("c", run_worker=False)
    assert cluster.name_of(await cluster.converged()) == "a"
    # Put the model on b, away from the master.
    b = cluster.nodes["b"]
    await place(b, MODEL, excluded=[cluster.nodes["a"].node_id])
    await cluster.ready(b)
    [instance] = b.replica.state.instances.values()
    [runner_id] = instance.shards
    pid_before = await runner_pid(b, runner_id)
    await cluster.kill("a")
    new_master = await cluster.converged()
    assert cluster.name_of(new_master) in ("b", "c")
    await cluster.ready(cluster.nodes["c"])
    assert list(cluster.nodes["c"].replica.state.instances) == [instance.instance_id]
    assert await chat(cluster.nodes["c"]) == "hello from the cluster"
    assert await runner_pid(b, runner_id) == pid_before  # no reload across the master change


@pytest.mark.anyio
async def test_losing_the_node_that_holds_the_instance_places_it_again(
        cluster: Cluster) -> None:
    await cluster.start("a", force_master=True)
    await cluster.start("b")
    await cluster.converged()
    a = cluster.nodes["a"]
    await place(a, MODEL, excluded=[a.node_id])
    await cluster.ready(a)
    await cluster.kill("b")
    with anyio.fail_after(20):
        while not any(s.node_id == a.node_id for i in a.replica.state.instances.values()
                      for s in i.shards.values()):
            await anyio.sleep(0.1)
    await cluster.ready(a)
    assert await chat(a) == "hello from the cluster"


@pytest.mark.anyio
async def test_two_namespaces_on_one_network_stay_apart(cluster: Cluster) -> None:
    one = await cluster.start("a", namespace="one")
    two = await cluster.start("b", namespace="two")
    await anyio.sleep(1.0)
    assert one.members.live == {one.node_id} and two.members.live == {two.node_id}
    assert one.master_node == one.node_id and two.master_node == two.node_id
