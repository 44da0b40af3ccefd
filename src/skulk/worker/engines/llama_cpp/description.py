"""The llama.cpp engine as the rest of Skulk sees it; imports nothing of llama.cpp."""

import importlib.util

from skulk.worker.engines.description import EngineDescription, EngineOptions


def probe_backend(_platform: str) -> str | None:
    """llama-cpp-python's CPU build, when it is installed (found, not imported)."""
    return "llama_cpp-cpu" if importlib.util.find_spec("llama_cpp") is not None else None


# llama.cpp maps the GGUF as it is on disk; its compute buffers and the small C++ runtime
# add about a tenth. Its KV cache is f16. It runs a model whole on one node.
LLAMA_CPP = EngineDescription(
    name="llama_cpp",
    engine_class="skulk.worker.engines.llama_cpp.engine:LlamaCppEngine",
    options=EngineOptions,
    weight_format="gguf",
    overhead_factor=1.10,
    kv_bytes_per_value=2,
    probe_backend=probe_backend,
)
