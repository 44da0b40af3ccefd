"""A node's device links: the options each rank's runner gets (where the device server
listens, where the head dials and which node it must find there, the node's trust
material), and a revocation reaching the runners given links. The links themselves are
tests/test_ggml_rpc_secure_channel.py's (real llama.cpp, real TLS)."""

from pathlib import Path

import pytest

from skulk.node_identity import load_or_create_identity
from skulk.shared.types.ids import InstanceId, ModelId, NodeId, RunnerId
from skulk.shared.types.instances import Instance, ShardAssignment
from skulk.testing.cluster_trust import make_member
from skulk.trust.files import TrustFiles
from skulk.worker.device_links import DeviceLinks, ipv4_listen_host
from skulk.worker.engines.llama_cpp.description import LlamaCppOptions
from skulk.worker.runner.messages import LifecycleMessage, RevokedNodes


def split_instance(ring_port: int, nodes: tuple[NodeId, NodeId] = (NodeId("n0"), NodeId("n1"))
                   ) -> Instance:
    shards = {RunnerId(f"r{rank}"): ShardAssignment(
        node_id=nodes[rank], rank=rank, world_size=2, start_layer=(0, 18)[rank],
        end_layer=(18, 30)[rank], ring_host=("10.0.0.1", "10.0.0.2")[rank])
        for rank in (0, 1)}
    return Instance(instance_id=InstanceId("i"), model_id=ModelId("m"), engine="llama_cpp",
                    sharding="pipeline", shards=shards, context_token_limit=2048,
                    ring_port=ring_port)


@pytest.mark.anyio
async def test_an_insecure_clusters_ranks_link_in_plain_tcp_at_the_ring_ports(
        tmp_path: Path) -> None:
    instance = split_instance(41000)
    serving = DeviceLinks(tls=None, host="10.0.0.2", cache_dir=tmp_path, revoked=frozenset)
    head = DeviceLinks(tls=None, host="10.0.0.1", cache_dir=tmp_path, revoked=frozenset)
    device = await serving.options_for(instance, RunnerId("r1"))
    assert device == {"rpc_listen": "10.0.0.2:41001", "rpc_cache_dir": str(tmp_path)}
    options = await head.options_for(instance, RunnerId("r0"))
    assert options == {"rpc_servers": "10.0.0.2:41001", "rpc_layers": "18,12"}
    parsed = LlamaCppOptions.parse(options)
    assert parsed.rpc_ca_certificate is None and parsed.rpc_peers == []


@pytest.mark.anyio
async def test_a_secure_clusters_ranks_get_the_trust_material_and_the_placed_node(
        tmp_path: Path) -> None:
    await make_member(tmp_path / "ca", tmp_path / "serving")
    serving_node = load_or_create_identity(tmp_path / "serving").node_id
    tls = TrustFiles(tmp_path / "serving").tls_files()
    revoked = {NodeId("node-gone")}
    links = DeviceLinks(tls=tls, host="10.0.0.2", cache_dir=tmp_path,
                        revoked=lambda: revoked)
    instance = split_instance(41000, (NodeId("node-head"), serving_node))
    trust = {"rpc_ca_certificate": str(tls.ca_certificate),
             "rpc_certificate": str(tls.certificate), "rpc_private_key": str(tls.private_key),
             "rpc_revoked": "node-gone"}
    assert await links.options_for(instance, RunnerId("r1")) == {
        "rpc_listen": "10.0.0.2:41001", "rpc_cache_dir": str(tmp_path), **trust}
    head = await links.options_for(instance, RunnerId("r0"))
    assert head == {"rpc_servers": "10.0.0.2:41001", "rpc_peers": serving_node,
                    "rpc_layers": "18,12", **trust}
    assert LlamaCppOptions.parse(head).rpc_revoked == ["node-gone"]


@pytest.mark.anyio
async def test_a_changed_revocation_list_reaches_each_runner_given_links_once(
        tmp_path: Path) -> None:
    revoked: set[NodeId] = set()
    links = DeviceLinks(tls=None, host="127.0.0.1", cache_dir=tmp_path,
                        revoked=lambda: revoked)
    instance = split_instance(41000)
    told: dict[str, list[LifecycleMessage]] = {"r0": [], "r1": [], "stranger": []}
    for runner in ("r0", "r1"):
        await links.options_for(instance, RunnerId(runner))
        links.attach(RunnerId(runner), told[runner].append)
    links.attach(RunnerId("stranger"), told["stranger"].append)  # given no links here
    links.revocations_changed()
    assert told == {"r0": [], "r1": [], "stranger": []}, "nothing changed"
    revoked.add(NodeId("n0"))
    links.revocations_changed()
    links.revocations_changed()
    assert told["r0"] == told["r1"] == [RevokedNodes(nodes=[NodeId("n0")])]
    assert told["stranger"] == []
    links.close(RunnerId("r1"))
    revoked.add(NodeId("n9"))
    links.revocations_changed()
    assert told["r0"][-1] == RevokedNodes(nodes=[NodeId("n0"), NodeId("n9")])
    assert len(told["r1"]) == 1, "a closed runner is told nothing more"


def test_a_device_server_listens_on_ipv4_every_interface_for_an_ipv6_any_listen() -> None:
    assert ipv4_listen_host("::") == "0.0.0.0"
    assert ipv4_listen_host("10.0.0.2") == "10.0.0.2"
    with pytest.raises(ValueError, match="IPv4 only"):
        ipv4_listen_host("fe80::1")
