"""Members-only ggml RPC with no relay (tools/patches/ggml-rpc-secure-channel.patch and
rust/channel/src/channel.rs), for real: the production device server and head engine split
the bundled GGUF, each with the node's TLS material from `skulk.trust` in its options, as
a node's `DeviceLinks` gives them.

What users see: a member's split answers the whole model's greedy text; a revocation ends
a member's open link without a restart (the head fails, no hang) and refuses it after,
while the server goes on serving others; a stranger of another cluster, plain TCP and a
head that dials a server not on the node the master placed are refused; a server that
goes away ends its head's link; and on an insecure cluster (no trust material) the same
split links in plain TCP.

Needs the installed llama-cpp-python built with the tree's patches (`make install`
rebuilds it when they change); any other build is skipped, by its marker.
"""

import multiprocessing
import os
import socket
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from pathlib import Path

import anyio
import pytest

REPOSITORY = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPOSITORY))

from bench.llama_patches import installed_patches, tree_patches  # noqa: E402

from skulk.node_identity import load_or_create_identity  # noqa: E402
from skulk.testing.cluster_trust import make_member  # noqa: E402
from skulk.testing.models import bundled_gguf  # noqa: E402
from skulk.testing.ports import free_port  # noqa: E402
from skulk.trust.files import TrustFiles  # noqa: E402

pytestmark = pytest.mark.skipif(
    installed_patches() != tree_patches(),
    reason="the installed llama.cpp is not built with the tree's tools/patches "
           "(make install)")

LAYERS = 30
PROMPT = "What is the capital of France?"
TOKENS = 12
ANSWER_SECONDS = 120.0


def _trust(data_dir: Path) -> dict[str, str]:
    tls = TrustFiles(data_dir).tls_files()
    return {"rpc_ca_certificate": str(tls.ca_certificate),
            "rpc_certificate": str(tls.certificate), "rpc_private_key": str(tls.private_key)}


def _device(listen: str, cache_dir: str, trust: dict[str, str], revoked: str,
            control: Connection) -> None:
    """The production device server; then answers ("stats",) with (refused, open links)
    and ("revoke", nodes) with how many open links that ended, as a runner is told."""
    from skulk.worker import rpc_channel
    from skulk.worker.engines.llama_cpp.description import LlamaCppOptions
    from skulk.worker.engines.llama_cpp.device_server import LlamaDeviceServer
    from skulk.worker.engines.protocol import EngineConfig

    options = LlamaCppOptions.parse({"rpc_listen": listen, "rpc_cache_dir": cache_dir,
                                     "rpc_revoked": revoked, **trust})
    LlamaDeviceServer(EngineConfig(model_path="", context_token_limit=512, n_threads=1,
                                   world_size=2, rank=1, options=options)).load()
    control.send("listening")
    while (order := control.recv()) is not None:
        if order[0] == "stats":
            control.send((rpc_channel.refused(), rpc_channel.open_links()))
        else:
            control.send(rpc_channel.set_revoked(frozenset(order[1])))


def _head(options: dict[str, str], orders: Connection) -> None:
    """The production head engine (whole when `options` is empty): "loaded", then each
    order's greedy text."""
    from skulk.shared.types.ids import ModelId
    from skulk.shared.types.tasks import ChatMessage, GenerationParams
    from skulk.worker.engines.llama_cpp.description import LlamaCppOptions
    from skulk.worker.engines.llama_cpp.engine import LlamaCppEngine
    from skulk.worker.engines.protocol import EngineConfig

    os.environ["GGML_NO_BACKTRACE"] = "1"  # ggml's abort would run gdb for the trace
    split = bool(options)
    engine = LlamaCppEngine(EngineConfig(
        model_path=str(bundled_gguf()), context_token_limit=512, n_threads=1,
        world_size=2 if split else 1, end_layer=LAYERS // 2 if split else LAYERS,
        options=LlamaCppOptions.parse(options)))
    engine.load()
    orders.send("loaded")
    while orders.recv() is not None:
        params = GenerationParams(model_id=ModelId("smollm2-135m"), max_tokens=TOKENS,
                                  messages=[ChatMessage(role="user", content=PROMPT)],
                                  temperature=0.0)
        orders.send("".join(chunk.text for chunk in engine.generate(params)))


class Peer:
    """A spawned process and its pipe; every wait has a deadline and notices an exit."""

    def __init__(self, target: Callable[..., None], *args: object) -> None:
        spawn = multiprocessing.get_context("spawn")
        self.ours, theirs = spawn.Pipe()
        self.process: BaseProcess = spawn.Process(target=target, args=(*args, theirs),
                                                  daemon=True)
        self.process.start()

    def answer(self, seconds: float = ANSWER_SECONDS) -> object:
        """Its next answer, or None once it has exited without one."""
        deadline = time.monotonic() + seconds
        while not self.ours.poll(0.1):
            assert time.monotonic() < deadline, f"no answer within {seconds:.0f} s"
        try:
            return self.ours.recv()
        except EOFError:  # it exited: the pipe's end is all that is left
            self.process.join(10)
            return None

    def ask(self, order: object) -> object:
        self.ours.send(order)
        return self.answer()

    def stop(self) -> None:
        self.process.kill()
        self.process.join(10)


@contextmanager
def peers() -> Iterator[list[Peer]]:
    started: list[Peer] = []
    try:
        yield started
    finally:
        for peer in started:
            peer.stop()


@pytest.fixture(scope="module")
def members(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Three members of one cluster and a stranger certified by another authority."""
    root = tmp_path_factory.mktemp("channel")
    dirs = {name: root / name for name in ("serving", "head", "other", "stranger")}
    for name, data_dir in dirs.items():
        anyio.run(make_member, root / ("other-ca" if name == "stranger" else "ca"), data_dir)
    return dirs


def node(data_dir: Path) -> str:
    return str(load_or_create_identity(data_dir).node_id)


@pytest.fixture(scope="module")
def whole_text() -> str:
    with peers() as started:
        started.append(whole := Peer(_head, {}))
        assert whole.answer() == "loaded"
        text = whole.ask("generate")
        assert isinstance(text, str) and text
        return text


def head_options(endpoint: str, peer_node: str, member: Path) -> dict[str, str]:
    return {"rpc_servers": endpoint, "rpc_peers": peer_node,
            "rpc_layers": f"{LAYERS // 2},{LAYERS - LAYERS // 2}", **_trust(member)}


def start_device(started: list[Peer], members: dict[str, Path] | None, tmp_path: Path,
                 revoked: str = "") -> tuple[Peer, str]:
    """The device server, with the serving member's trust material (None: insecure)."""
    endpoint = f"127.0.0.1:{free_port()}"
    trust = {} if members is None else _trust(members["serving"])
    device = Peer(_device, endpoint, str(tmp_path), trust, revoked)
    started.append(device)
    assert device.answer() == "listening"
    return device, endpoint


def test_a_revocation_ends_a_members_split_and_refuses_it_while_others_go_on(
        members: dict[str, Path], whole_text: str, tmp_path: Path) -> None:
    serving = node(members["serving"])
    with peers() as started:
        device, endpoint = start_device(started, members, tmp_path)
        started.append(head := Peer(_head, head_options(endpoint, serving, members["head"])))
        assert head.answer() == "loaded"
        assert head.ask("generate") == whole_text, "TLS changes no byte of the split"
        assert device.ask(("stats",)) == (0, 1), "the readiness probe was refused quietly"

        assert device.ask(("revoke", [node(members["other"])])) == 0
        assert head.ask("generate") == whole_text, "another node's revocation ends nothing"
        assert device.ask(("revoke", [node(members["head"])])) == 1
        head.ours.send("generate")
        assert head.answer(30) is None, "the revoked head's link ended: it failed, no hang"
        assert device.ask(("stats",)) == (0, 0)

        started.append(again := Peer(_head, head_options(endpoint, serving, members["head"])))
        assert again.answer() is None, "a revoked member cannot link again"
        started.append(other := Peer(_head, head_options(endpoint, serving, members["other"])))
        assert other.answer() == "loaded", "the server went on accepting members"
        assert other.ask("generate") == whole_text
        assert device.ask(("stats",)) == (1, 1)


def test_strangers_and_plain_tcp_are_refused_and_the_server_goes_on(
        members: dict[str, Path], whole_text: str, tmp_path: Path) -> None:
    serving = node(members["serving"])
    with peers() as started:
        device, endpoint = start_device(started, members, tmp_path)
        host, _, port = endpoint.rpartition(":")
        hello = b"\x0e" + bytes(64)  # a ggml RPC hello, in the clear
        with socket.create_connection((host, int(port)), timeout=10) as plain:
            plain.sendall(hello)
            reply = b""
            with suppress(ConnectionResetError):
                while data := plain.recv(4096):
                    reply += data
        assert not reply or reply[0] == 0x15, f"at most a TLS alert came back: {reply!r}"
        started.append(stranger := Peer(
            _head, head_options(endpoint, serving, members["stranger"])))
        assert stranger.answer() is None, "a stranger's head cannot link"
        started.append(head := Peer(_head, head_options(endpoint, serving, members["head"])))
        assert head.answer() == "loaded"
        assert head.ask("generate") == whole_text
        assert device.ask(("stats",)) == (2, 1)


def test_a_head_refuses_a_server_that_is_not_on_the_placed_node(
        members: dict[str, Path], tmp_path: Path) -> None:
    with peers() as started:
        device, endpoint = start_device(started, members, tmp_path)
        placed = node(members["other"])  # where the master placed the rank
        started.append(head := Peer(_head, head_options(endpoint, placed, members["head"])))
        assert head.answer() is None
        assert device.ask(("stats",)) == (1, 0), "nor did the server keep a link"


def test_a_server_that_goes_away_ends_its_heads_link(
        members: dict[str, Path], tmp_path: Path) -> None:
    serving = node(members["serving"])
    with peers() as started:
        device, endpoint = start_device(started, members, tmp_path)
        started.append(head := Peer(_head, head_options(endpoint, serving, members["head"])))
        assert head.answer() == "loaded"
        device.stop()
        head.ours.send("generate")
        assert head.answer(30) is None, "the head failed on the ended link, no hang"


def test_an_insecure_clusters_split_links_in_plain_tcp(
        whole_text: str, tmp_path: Path) -> None:
    with peers() as started:
        device, endpoint = start_device(started, None, tmp_path)
        started.append(head := Peer(_head, {
            "rpc_servers": endpoint, "rpc_layers": f"{LAYERS // 2},{LAYERS - LAYERS // 2}"}))
        assert head.answer() == "loaded"
        assert head.ask("generate") == whole_text
        assert device.ask(("stats",)) == (0, 0), "no channel: nothing refused, nothing held"
