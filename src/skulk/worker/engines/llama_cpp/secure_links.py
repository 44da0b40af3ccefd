"""A split llama.cpp runner's ggml RPC links, members-only on a secure cluster: the node's
trust material and revocation list from the runner's options, installed into ggml RPC
before the first link opens (`skulk.worker.rpc_channel`). Without trust material (an
`--insecure` cluster) nothing is installed: plain TCP."""

from collections.abc import Mapping

from skulk.shared.types.ids import NodeId
from skulk.worker import rpc_channel
from skulk.worker.engines.llama_cpp import rpc_lib
from skulk.worker.engines.llama_cpp.description import LlamaCppOptions
from skulk.worker.engines.protocol import InvalidRequest


def channel_files(options: LlamaCppOptions) -> rpc_channel.ChannelFiles | None:
    """The node's trust material the options name; None on an insecure cluster."""
    paths = (options.rpc_ca_certificate, options.rpc_certificate, options.rpc_private_key)
    if paths == (None, None, None):
        return None
    ca_certificate, certificate, private_key = paths
    if ca_certificate is None or certificate is None or private_key is None:
        raise InvalidRequest("a split llama.cpp runner needs all of rpc_ca_certificate, "
                             "rpc_certificate and rpc_private_key, or none")
    return rpc_channel.ChannelFiles(ca_certificate, certificate, private_key)


def install_channel(options: LlamaCppOptions, peers: Mapping[str, NodeId]) -> bool:
    """Make this runner's links members-only when the options carry trust material (then
    True); `peers` maps each device server the head dials to its node."""
    files = channel_files(options)
    if files is None:
        return False
    rpc_channel.install(files, peers, frozenset(NodeId(node) for node in options.rpc_revoked),
                        rpc_lib.channel_setter())
    return True


def head_peers(options: LlamaCppOptions) -> dict[str, NodeId]:
    """Each device server's endpoint → the node it must be (the head's options)."""
    if options.rpc_peers and len(options.rpc_peers) != len(options.rpc_servers):
        raise InvalidRequest(f"{len(options.rpc_servers)} rpc_servers but "
                             f"{len(options.rpc_peers)} rpc_peers")
    return {server: NodeId(node) for server, node in zip(options.rpc_servers,
                                                         options.rpc_peers, strict=False)}
