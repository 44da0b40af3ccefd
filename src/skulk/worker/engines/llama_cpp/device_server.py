"""A rank other than the head of a split llama.cpp instance: it serves this node's compute
device to the head over ggml RPC and runs nothing itself.

The head sends the weights of this rank's layers when it loads and the activations at
every step; the server keeps the layers' tensors and KV cache. It listens on the node's
side-channel address at the rank's ring port; on a secure cluster its links are TLS with
members only, inside ggml RPC's own sockets (`secure_links`, `skulk.worker.rpc_channel`).
"""

import os
import socket
import tempfile
import threading
import time

from skulk.shared.types.chunks import ErrorChunk
from skulk.shared.types.ids import TaskId
from skulk.shared.types.tasks import GenerationParams
from skulk.worker.engines.llama_cpp import rpc_lib, secure_links
from skulk.worker.engines.llama_cpp.description import LlamaCppOptions
from skulk.worker.engines.protocol import (
    EngineConfig,
    EngineEvent,
    InvalidRequest,
    TaskDone,
    TaskJoined,
    TaskOutput,
)

LISTEN_TIMEOUT_SECONDS = 20.0


class LlamaDeviceServer:
    """An `Engine` that takes no requests: one handed to it anyway is refused at the next
    step (the worker never sends it any; requests go to the head)."""

    def __init__(self, config: EngineConfig) -> None:
        self._config = config
        self._options = LlamaCppOptions.of(config.options)
        self._thread: threading.Thread | None = None
        self._refused: list[TaskId] = []

    def load(self) -> None:
        endpoint = self._options.rpc_listen
        if endpoint is None:
            raise InvalidRequest(f"rank {self._config.rank} of a split llama.cpp instance "
                                 "was given no rpc_listen endpoint")
        if not rpc_lib.rpc_available():
            raise rpc_lib.RpcUnavailable(
                "llama-cpp-python was built without ggml RPC; rebuild it with "
                "`tools/llama-cpp-backends.sh .venv/bin/python` (or `make install`)")
        cache_dir = self._options.rpc_cache_dir or os.path.join(tempfile.gettempdir(),
                                                                "skulk-rpc-cache")
        os.makedirs(cache_dir, exist_ok=True)
        threads = self._config.n_threads or os.cpu_count() or 1
        secure_links.install_channel(self._options, {})
        self._thread = threading.Thread(
            target=rpc_lib.serve_device, args=(endpoint, cache_dir, threads),
            name="ggml-rpc-server", daemon=True)
        self._thread.start()
        self._wait_listening(endpoint)

    def _wait_listening(self, endpoint: str) -> None:
        """Return once the server accepts connections; raise if its thread ended first
        (it could not bind) or it never does."""
        host, _, port = endpoint.rpartition(":")
        deadline = time.monotonic() + LISTEN_TIMEOUT_SECONDS
        while time.monotonic() < deadline:
            assert self._thread is not None
            if not self._thread.is_alive():
                raise OSError(f"the ggml RPC server could not listen on {endpoint}")
            try:
                # The server takes this as a client that left before its hello (with
                # the channel, before its handshake: refused without a word).
                with socket.create_connection((host, int(port)), timeout=1.0):
                    return
            except OSError:
                time.sleep(0.05)
        raise TimeoutError(f"the ggml RPC server on {endpoint} did not listen within "
                           f"{LISTEN_TIMEOUT_SECONDS:.0f} s")

    def warm_up(self) -> None:
        """Nothing to warm: the head's warm-up runs through this device."""

    def submit(self, task_id: TaskId, params: GenerationParams) -> None:
        self._refused.append(task_id)

    def cancel(self, task_id: TaskId) -> None:
        """Nothing runs here to cancel; a refused request ends at the next step anyway."""

    @property
    def has_work(self) -> bool:
        return bool(self._refused)

    @property
    def idle_step_seconds(self) -> float | None:
        return None  # the ggml RPC server runs on its own thread

    def step(self) -> list[EngineEvent]:
        events: list[EngineEvent] = []
        for task_id in self._refused:
            message = (f"rank {self._config.rank} serves its device to the head of its "
                       "instance; requests go to rank 0")
            events += [TaskJoined(task_id),
                       TaskOutput(task_id, ErrorChunk(error_kind="invalid_request",
                                                      message=message)),
                       TaskDone(task_id, "failed", message)]
        self._refused.clear()
        return events
