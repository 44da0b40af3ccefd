"""A node's device links: the options each rank's runner gets, the path they open from the
head's loopback to the device server's, and a revocation ending the links open to a node."""

import socket
import threading
from pathlib import Path

import anyio
import pytest

from skulk.node_identity import load_or_create_identity
from skulk.shared.types.ids import InstanceId, ModelId, NodeId, RunnerId
from skulk.shared.types.instances import Instance, ShardAssignment
from skulk.testing.cluster_trust import make_member
from skulk.testing.ports import free_port
from skulk.trust.files import TrustFiles
from skulk.worker.device_links import DeviceLinks


def split_instance(ring_port: int, nodes: tuple[NodeId, NodeId] = (NodeId("n0"), NodeId("n1"))
                   ) -> Instance:
    shards = {RunnerId(f"r{rank}"): ShardAssignment(
        node_id=nodes[rank], rank=rank, world_size=2, start_layer=(0, 18)[rank],
        end_layer=(18, 30)[rank], ring_host="127.0.0.1") for rank in (0, 1)}
    return Instance(instance_id=InstanceId("i"), model_id=ModelId("m"), engine="llama_cpp",
                    sharding="pipeline", shards=shards, context_token_limit=2048,
                    ring_port=ring_port)


def echo_once(port: int) -> threading.Thread:
    """A stand-in device server: echoes one connection."""
    listener = socket.create_server(("127.0.0.1", port))

    def serve() -> None:
        with listener, listener.accept()[0] as connection:
            while data := connection.recv(4096):
                connection.sendall(data)
    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    return thread


@pytest.mark.anyio
async def test_the_head_reaches_the_device_server_through_the_links_the_options_name(
        tmp_path: Path) -> None:
    instance = split_instance(free_port())
    serving = DeviceLinks(tls=None, host="127.0.0.1", cache_dir=tmp_path,
                          revoked=frozenset)
    head = DeviceLinks(tls=None, host="127.0.0.1", cache_dir=tmp_path,
                       revoked=frozenset)
    device = await serving.options_for(instance, RunnerId("r1"))
    assert set(device) == {"rpc_listen", "rpc_cache_dir"}
    server = echo_once(int(device["rpc_listen"].rpartition(":")[2]))
    options = await head.options_for(instance, RunnerId("r0"))
    assert options["rpc_layers"] == "18,12"
    [endpoint] = options["rpc_servers"].split(",")
    host, _, port = endpoint.rpartition(":")
    with socket.create_connection((host, int(port)), timeout=5) as connection:
        connection.sendall(b"activations")
        assert connection.recv(64) == b"activations"
    head.close(RunnerId("r0"))
    serving.close(RunnerId("r1"))
    server.join(5)
    assert not server.is_alive(), "closing the links ends the link to the server"


@pytest.mark.anyio
async def test_a_revocation_the_node_hands_over_ends_the_revoked_heads_open_link(
        tmp_path: Path) -> None:
    data = {name: tmp_path / name for name in ("head", "serving")}
    for folder in data.values():
        await make_member(tmp_path / "ca", folder)
    head_node, serving_node = (load_or_create_identity(data[name]).node_id
                               for name in ("head", "serving"))
    instance = split_instance(free_port(), (head_node, serving_node))
    revoked: set[NodeId] = set()
    serving = DeviceLinks(tls=TrustFiles(data["serving"]).tls_files(), host="127.0.0.1",
                          cache_dir=tmp_path, revoked=lambda: revoked)
    head = DeviceLinks(tls=TrustFiles(data["head"]).tls_files(), host="127.0.0.1",
                       cache_dir=tmp_path, revoked=frozenset)
    device = await serving.options_for(instance, RunnerId("r1"))
    server = echo_once(int(device["rpc_listen"].rpartition(":")[2]))
    [endpoint] = (await head.options_for(instance, RunnerId("r0")))["rpc_servers"].split(",")
    host, _, port = endpoint.rpartition(":")

    def revoke_while_open() -> bytes:
        with socket.create_connection((host, int(port)), timeout=5) as connection:
            connection.sendall(b"activations")
            assert connection.recv(64) == b"activations"
            revoked.add(head_node)
            serving.revocations_changed()
            return connection.recv(64)

    assert await anyio.to_thread.run_sync(revoke_while_open) == b"", \
        "the revoked head's open link ends without a restart"
    server.join(5)
    assert not server.is_alive()
    head.close(RunnerId("r0"))
    serving.close(RunnerId("r1"))
