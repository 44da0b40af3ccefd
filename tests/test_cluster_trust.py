"""Who gets into a cluster, with real processes and real Zenoh over mutual TLS: a machine
with the join token becomes a member; one without it never does; a member turned hostile
can neither crash a node nor forge what the others apply or stream."""

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import msgpack
import openai
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from skulk.node_identity import load_or_create_identity
from skulk.routing import topics
from skulk.routing.router import Router
from skulk.routing.router_test import SAMPLES
from skulk.routing.zenoh_transport import ZenohTransport
from skulk.shared.types.chunks import DataChunk, TokenChunk
from skulk.shared.types.commands import CommandEnvelope, DeleteInstance
from skulk.shared.types.election import ElectionMessage
from skulk.shared.types.events import (
    IndexedBatch,
    IndexedEvent,
    InstanceDeleted,
    LocalEvent,
    LocalEventBatch,
    StateSnapshotHydrated,
    TaskCreated,
)
from skulk.shared.types.ids import CommandId, InstanceId, NodeId, SessionId
from skulk.shared.types.state import State
from skulk.testing.cluster_trust import make_member
from skulk.trust.files import TrustFiles
from skulk.trust.setup import prepare_trust
from tests.node_process import NodeProcess

pytestmark = pytest.mark.integration
MODEL = "smollm2-135m"
# Longer than Zenoh's lease and an election: what has not joined by then never will.
OBSERVATION_SECONDS = 8.0
JUNK = b"\xff" * 64


def skulk(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "skulk.cli.main", *args],
                          capture_output=True, text=True, timeout=60)


def alive_members(node: NodeProcess) -> set[str]:
    return {n["node_id"] for n in node.cluster()["nodes"] if n["alive"]}


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[NodeProcess]]:
    """A serves the bundled model and made the cluster; B joined it with the token."""
    root = tmp_path_factory.mktemp("trust")
    namespace = f"trust-{time.monotonic_ns()}"
    first = NodeProcess(root / "a", "--namespace", namespace, "--serve", MODEL,
                        "--no-auto-place")
    nodes = [first]
    try:
        first.start()
        printed = skulk("cluster", "token", "--data-dir", str(first.data_dir))
        assert printed.returncode == 0, printed.stderr
        token = printed.stdout.strip()
        assert token in first.log(), "the first start prints the token"
        second = NodeProcess(root / "b", "--namespace", namespace, "--no-auto-place",
                             "--join", token,
                             "--peer", f"tcp/127.0.0.1:{first.transport_port}")
        nodes.append(second)
        second.start()
        first.wait_until(lambda: len(alive_members(first)) == 2, 60, "B to join A")
        first.wait_model_ready()
        second.wait_model_ready()  # B's replica has caught up with A's placement
        yield nodes
    finally:
        for node in nodes:
            if node.process is not None and node.process.poll() is None:
                node.stop()


def chat(node: NodeProcess, prompt: str = "Say hello.", max_tokens: int = 24) -> str:
    client = openai.OpenAI(base_url=f"{node.url}/v1", api_key="unused", max_retries=0)
    stream = client.chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": prompt}], max_tokens=max_tokens,
        temperature=0, stream=True)
    return "".join(part.choices[0].delta.content or "" for part in stream if part.choices)


def test_a_machine_with_the_token_joins_and_every_link_is_tls(
        pair: list[NodeProcess]) -> None:
    first, second = pair
    assert first.cluster()["security"] == "tls"
    assert alive_members(second) == alive_members(first) == {first.node_id(),
                                                             second.node_id()}
    assert (second.data_dir / "trust" / "node_cert.pem").exists()
    assert not (second.data_dir / "trust" / "ca_key.pem").exists(), \
        "the CA key stays on the node that made the cluster"
    assert chat(second), "a request taken by B is served by A's runner"


def test_a_wrong_token_is_refused_with_a_reason(pair: list[NodeProcess],
                                                tmp_path: Path) -> None:
    first, _ = pair
    token = skulk("cluster", "token", "--data-dir", str(first.data_dir)).stdout.strip()
    forged = token[:-6] + ("AAAAAA" if not token.endswith("AAAAAA") else "BBBBBB")
    outsider = NodeProcess(tmp_path / "x", "--join", forged,
                           "--peer", f"tcp/127.0.0.1:{first.transport_port}")
    with pytest.raises(AssertionError, match="exited with 2"):
        outsider.start(timeout=30)
    assert "could not join" in outsider.log()


def test_a_node_without_the_token_never_gets_in(pair: list[NodeProcess],
                                                tmp_path: Path) -> None:
    first, second = pair
    namespace = next(a for a in first._extra_args if a.startswith("trust-"))
    stranger = NodeProcess(tmp_path / "stranger", "--namespace", namespace,
                           "--peer", f"tcp/127.0.0.1:{first.transport_port}").start()
    try:
        heard: list[bytes] = []

        async def plain_peer() -> int:
            # A bare Zenoh peer, plain TCP to the TLS port, listening to everything.
            transport = await ZenohTransport.open(
                listen=[], connect=[f"tcp/127.0.0.1:{first.transport_port}"])
            try:
                async with anyio.create_task_group() as tasks:
                    subscription = transport.subscribe("**")

                    async def listen() -> None:
                        async for message in subscription:
                            heard.append(message.payload)

                    tasks.start_soon(listen)
                    await anyio.to_thread.run_sync(chat, second)
                    await transport.publish("skulk/anything", JUNK)
                    await anyio.sleep(1.0)
                    tasks.cancel_scope.cancel()
                return transport.peer_count()
            finally:
                await transport.close()

        assert anyio.run(plain_peer) == 0
        assert [payload for payload in heard if payload != JUNK] == [], \
            "a plain peer never completes a session, so it hears only itself"
        time.sleep(OBSERVATION_SECONDS)
        assert stranger.node_id() not in alive_members(first)
        assert alive_members(stranger) == {stranger.node_id()}
        assert chat(first)
    finally:
        stranger.stop()


class HostileMember:
    """A process holding a valid node certificate of the cluster, speaking raw Zenoh."""

    def __init__(self, data_dir: Path, authority: Path, connect: str) -> None:
        self._data_dir, self._authority, self._connect = data_dir, authority, connect
        self.router: Router | None = None
        self.transport: ZenohTransport | None = None

    async def __aenter__(self) -> "HostileMember":
        await make_member(self._authority, self._data_dir)
        identity = load_or_create_identity(self._data_dir)
        trust = await prepare_trust(self._data_dir, identity, join=None, peers=[],
                                    cluster_name="x")
        self.transport = await ZenohTransport.open(
            listen=[], connect=[self._connect], tls=TrustFiles(self._data_dir).tls_files())
        self.signer, self.verifier = trust.signer, trust.verifier
        return self

    def attach(self, namespace: str) -> Router:
        assert self.transport is not None
        self.router = Router(self.transport, namespace=namespace, signer=self.signer,
                             verifier=self.verifier)
        return self.router

    async def raw(self, topic: topics.TypedTopic[Any], document: object,
                  address: NodeId | None = None) -> None:
        """A correctly signed envelope around any msgpack document."""
        assert self.router is not None and self.transport is not None
        key = self.router.key(topic, address)
        payload = document if isinstance(document, bytes) else msgpack.packb(document)
        await self.transport.publish(key, self.signer.seal(key, payload))

    async def leave(self) -> None:
        assert self.transport is not None
        await self.transport.close()

    async def __aexit__(self, *exc: object) -> None:
        await self.leave()


def with_every_int(document: object, value: int) -> object:
    """`document` with every integer in it replaced by `value`."""
    if isinstance(document, bool):
        return document
    if isinstance(document, int):
        return value
    if isinstance(document, list):
        return [with_every_int(item, value) for item in document]
    if isinstance(document, dict):
        return {key: with_every_int(item, value) for key, item in document.items()}
    return document


def dropped_total(node: NodeProcess) -> float:
    text = node.get("/metrics").text
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
               if line.startswith("skulk_dropped_messages_total{"))


# The extremes msgpack can carry (2**64 itself cannot be sent at all).
HUGE = [2**64 - 1, 2**63, -1, -(2**63)]


def test_a_hostile_member_cannot_crash_a_node_or_forge_state_or_streams(
        pair: list[NodeProcess], tmp_path: Path) -> None:
    first, second = pair
    namespace = next(a for a in first._extra_args if a.startswith("trust-"))
    before = first.state()
    instance_ids = set(before["instances"])
    master = first.cluster()["master_node_id"]
    answers: list[str] = []
    hostile_ids: list[str] = []

    async def attack() -> None:
        async with HostileMember(tmp_path / "hostile", first.data_dir,
                                 f"tcp/127.0.0.1:{first.transport_port}") as hostile:
            router = hostile.attach(namespace)
            me = hostile.signer.node_id
            hostile_ids.append(me)
            async with router.subscribe(topics.GLOBAL_EVENTS) as events, \
                    router.subscribe(topics.TELEMETRY) as readings:
                with anyio.fail_after(30):  # until the link is up: a member's reading
                    await anext(readings)
                for topic in topics.ALL_TOPICS:
                    address = NodeId(first.node_id()) if topic.addressed else None
                    await hostile.raw(topic, b"\xc1 not msgpack", address)
                    await hostile.raw(topic, b"\x91" * 4000 + b"\x90", address)  # deep
                    await hostile.raw(topic, b"\x00" * (4 << 20), address)  # oversized
                    sample = SAMPLES[topic.name].model_dump(mode="json")
                    # Claim our own origin, so the extremes reach validation and beyond.
                    sample.update({key: me for key in ("node_id", "origin", "master_node")
                                   if key in sample})
                    for huge in HUGE:
                        await hostile.raw(topic, with_every_int(sample, huge), address)
                # A member (it holds a token from here on) claiming a seniority beyond
                # what the wire can carry, in a far later round. (A certified member is
                # trusted with elections: it could claim to be forced; what no honest
                # node can send is refused.)
                router.announce_membership()
                await anyio.sleep(1.0)
                await router.publish(topics.ELECTION, ElectionMessage(
                    node_id=me, clock=1 << 30, seniority=(1 << 53) + 1,
                    commands_seen=1 << 40))
                forged_session = SessionId("sess-forged")
                await hostile.raw(topics.GLOBAL_EVENTS, IndexedBatch(
                    master_node=NodeId(master), events=[IndexedEvent(
                        index=1 << 40, session=forged_session, master_node=NodeId(master),
                        event=StateSnapshotHydrated(state=State()))]).model_dump(mode="json"))
                for instance_id in instance_ids:
                    await hostile.raw(topics.GLOBAL_EVENTS, IndexedBatch(
                        master_node=NodeId(master), events=[IndexedEvent(
                            index=before["last_event_applied_idx"] + 1,
                            session=SessionId(first.cluster()["session"]),
                            master_node=NodeId(master),
                            event=InstanceDeleted(instance_id=InstanceId(instance_id),
                                                  reason="forged"))]).model_dump(mode="json"))
                    # Proposed in its own name: a member speaks for its own runners only.
                    await router.publish(topics.LOCAL_EVENTS, LocalEventBatch(
                        origin=me, events=[LocalEvent(
                            origin=me, epoch="hostile", origin_seq=0,
                            event=InstanceDeleted(instance_id=InstanceId(instance_id),
                                                  reason="forged"))]))
                    await router.publish(topics.COMMANDS, CommandEnvelope(
                        origin=NodeId(second.node_id()), command=DeleteInstance(
                            command_id=CommandId("cmd-forged"),
                            instance_id=InstanceId(instance_id))))
                # Forged chunks for a live stream: watch for its task, then write into it.
                async with anyio.create_task_group() as tasks:
                    async def ask() -> None:
                        answers.append(await anyio.to_thread.run_sync(
                            lambda: chat(first, "Count to twenty.", 48)))

                    tasks.start_soon(ask)
                    with anyio.fail_after(60):
                        async for batch in events:
                            created = [indexed.event.task for indexed in batch.events
                                       if isinstance(indexed.event, TaskCreated)]
                            if created:
                                task = created[0]
                                break
                    for sequence in range(64):
                        await router.publish(topics.DATA, DataChunk(
                            command_id=task.command_id, owner_node=task.owner_node,
                            sequence=sequence, chunk=TokenChunk(text=" INJECTED")))
                # Leaving makes every node campaign again after all that.
                await hostile.leave()
                await anyio.sleep(OBSERVATION_SECONDS / 2)

    anyio.run(attack)
    assert answers and answers[0] and "INJECTED" not in answers[0]
    for node in pair:
        assert node.process is not None and node.process.poll() is None, node.log()
        assert "Traceback" not in node.log()
    assert set(first.state()["instances"]) == instance_ids
    assert first.cluster()["master_node_id"] == master
    for node in pair:
        assert f"master is {hostile_ids[0]}" not in node.log(), "a vote no honest " \
            "node could send must not take the seat"
    assert first.cluster()["session"] == second.cluster()["session"]
    assert dropped_total(first) >= 20 and dropped_total(second) >= 10
    assert chat(second)


@settings(max_examples=10, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(documents=st.lists(st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(2**63), max_value=2**64 - 1)
    | st.floats() | st.text(max_size=20) | st.binary(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner,
                                                                  max_size=6),
    max_leaves=20), min_size=1, max_size=8))
def test_random_documents_on_every_topic_change_nothing(
        pair: list[NodeProcess], tmp_path_factory: pytest.TempPathFactory,
        documents: list[object]) -> None:
    first, _ = pair
    namespace = next(a for a in first._extra_args if a.startswith("trust-"))
    state = first.state()

    async def send() -> None:
        async with HostileMember(tmp_path_factory.mktemp("fuzz"), first.data_dir,
                                 f"tcp/127.0.0.1:{first.transport_port}") as hostile:
            router = hostile.attach(namespace)
            async with router.subscribe(topics.TELEMETRY) as readings:
                with anyio.fail_after(30):
                    await anext(readings)
            for topic in topics.ALL_TOPICS:
                address = NodeId(first.node_id()) if topic.addressed else None
                for document in documents:
                    await hostile.raw(topic, document, address)
            await anyio.sleep(0.3)

    anyio.run(send)
    assert first.process is not None and first.process.poll() is None, first.log()
    after = first.state()
    assert after["instances"] == state["instances"]
    assert httpx.get(f"{first.url}/healthz", timeout=10).status_code == 200


def test_a_revoked_member_is_refused_at_once_and_its_links_after_a_restart(
        pair: list[NodeProcess]) -> None:
    first, second = pair
    expelled = second.node_id()
    reply = httpx.post(f"{first.url}/cluster/revoke", json={"node_id": expelled}, timeout=30)
    assert reply.status_code == 200, reply.text
    assert expelled in first.state()["revoked_nodes"]
    first.wait_until(lambda: expelled not in alive_members(first), 30,
                     "the revoked member to leave A's membership")
    first.wait_until(lambda: "revoked_node" in first.get("/metrics").text, 30,
                     "the revoked member's next message to be refused")
    assert chat(first), "the rest of the cluster goes on serving"
    assert first.stop() == 0
    first.start()
    time.sleep(OBSERVATION_SECONDS)
    assert expelled not in alive_members(first), "its certificate is refused at the link"
    assert first.node_id() not in alive_members(second)
