"""ggml RPC for real: a device server in one process, a head in another that registers it
and loads the bundled GGUF with half its layers there. The layers must really move: the
server grows by their size, and the head's greedy text stays what one process says.

Both sides run in processes of their own: a process that registered a server asks it
about memory at every later model load, and would abort once the server is gone.
"""

import multiprocessing
import time
from collections.abc import Callable
from multiprocessing.connection import Connection
from pathlib import Path

import psutil

from skulk.testing.models import bundled_gguf
from skulk.testing.ports import free_port

CONTEXT = 256


def _serve(port: int, cache_dir: str) -> None:
    from skulk.worker.engines.llama_cpp import rpc_lib

    rpc_lib.serve_device(f"127.0.0.1:{port}", cache_dir, 1)


def _head(endpoints: list[str], results: Connection) -> None:
    from skulk.worker.engines.llama_cpp import rpc_lib
    from skulk.worker.engines.llama_cpp.llama_lib import offload_for, open_context

    before = rpc_lib.device_count() if endpoints else 0
    if endpoints:
        rpc_lib.register_servers(endpoints)
    after = rpc_lib.device_count() if endpoints else 0
    context = open_context(str(bundled_gguf()), context_tokens=CONTEXT, threads=1,
                           offload=offload_for([15, 15]) if endpoints else None)
    prompt = context.tokenize("The capital of France is", add_bos=True, special=False)
    tokens = []
    for token in context.generate(prompt, top_k=1, top_p=1.0, min_p=0.0, temperature=0.0,
                                  repeat_penalty=1.0):
        tokens.append(token)
        if len(tokens) == 8:
            break
    results.send((before, after, context.detokenize(tokens)))
    results.recv()  # hold the model (and the server's copy of its layers) until told


def _run_head(endpoints: list[str], while_loaded: Callable[[], int] = lambda: 0
              ) -> tuple[int, int, bytes, int]:
    """The head's device counts and greedy text, and `while_loaded()` taken while its
    model is still loaded."""
    spawn = multiprocessing.get_context("spawn")
    ours, theirs = spawn.Pipe()
    head = spawn.Process(target=_head, args=(endpoints, theirs))
    head.start()
    try:
        assert ours.poll(120), "the head did not load and answer within 120 s"
        before, after, text = ours.recv()
        seen = while_loaded()
        ours.send("exit")
        head.join(30)
    finally:
        head.kill()
    return before, after, text, seen


def test_a_head_offloads_half_the_layers_to_a_device_server_and_says_the_same(
        tmp_path: Path) -> None:
    port = free_port()
    spawn = multiprocessing.get_context("spawn")
    server = spawn.Process(target=_serve, args=(port, str(tmp_path)), daemon=True)
    server.start()
    try:
        deadline = time.monotonic() + 30
        while not any(c.laddr.port == port for c in psutil.Process(server.pid).net_connections()
                      if c.status == psutil.CONN_LISTEN):
            assert time.monotonic() < deadline and server.is_alive(), "server never listened"
            time.sleep(0.05)
        serving = psutil.Process(server.pid)
        idle = serving.memory_info().rss
        before, after, split_text, holding = _run_head(
            [f"127.0.0.1:{port}"], lambda: int(serving.memory_info().rss))
    finally:
        server.kill()
        server.join(10)
    _, _, whole_text, _ = _run_head([])
    assert after == before + 1, "the head's llama.cpp does not see the remote device"
    assert holding - idle > 20 * 1024**2, \
        f"the server holds {(holding - idle) >> 20} MiB more: the layers did not move"
    assert split_text == whole_text and split_text
