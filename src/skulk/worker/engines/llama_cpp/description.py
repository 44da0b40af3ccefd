"""The llama.cpp engine as the rest of Skulk sees it; imports nothing of llama.cpp."""

import importlib.util

from pydantic import Field

from skulk.worker.engines.description import CommaSeparated, EngineDescription, EngineOptions


def probe_backend(_platform: str) -> str | None:
    """llama-cpp-python's CPU build, when it is installed (found, not imported)."""
    return "llama_cpp-cpu" if importlib.util.find_spec("llama_cpp") is not None else None


class LlamaCppOptions(EngineOptions):
    """What the worker tells a llama.cpp runner beyond the common options. A split instance
    runs the model on its head (rank 0), which offloads the later layers to the other
    ranks' devices, each served over ggml RPC behind the nodes' relays."""

    rpc_servers: CommaSeparated = Field(default_factory=list)
    """The head's: where it reaches each other rank's device server, in rank order (the
    loopback ends of its node's relays)."""
    rpc_layers: CommaSeparated = Field(default_factory=list)
    """The head's: how many layers each rank holds, in rank order (its own first)."""
    rpc_listen: str | None = Field(default=None, pattern=r"^127\.0\.0\.1:\d{1,5}$")
    """A device server's: the loopback endpoint it listens on (its node's relay dials it)."""
    rpc_cache_dir: str | None = None
    """A device server's: where it keeps the tensors the head sends by hash, so a reload
    sends only hashes."""


# llama.cpp maps the GGUF as it is on disk; its compute buffers and the small C++ runtime
# add about a tenth. Its KV cache is f16. Split, the head runs the model and the other
# ranks serve their device to it.
LLAMA_CPP = EngineDescription(
    name="llama_cpp",
    engine_class="skulk.worker.engines.llama_cpp.engine:LlamaCppEngine",
    options=LlamaCppOptions,
    weight_format="gguf",
    overhead_factor=1.10,
    kv_bytes_per_value=2,
    probe_backend=probe_backend,
    shardings=frozenset({"pipeline"}),
    device_server_class="skulk.worker.engines.llama_cpp.device_server:LlamaDeviceServer",
)
