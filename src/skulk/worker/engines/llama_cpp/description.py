"""The llama.cpp engine as the rest of Skulk sees it; imports nothing of llama.cpp."""

import importlib.util
import os
import re
from collections.abc import Collection, Iterable, Sequence
from pathlib import Path

from pydantic import Field

from skulk.fitting.engines import LLAMA_CPP_FIT
from skulk.shared.types.telemetry import GpuBackend, GpuDevice
from skulk.worker.engines.description import EngineDescription
from skulk.worker.engines.machine_check import MachineCheck
from skulk.worker.engines.options import CommaSeparated, EngineOptions

# The GPU backends llama.cpp may be built with, best first when a build has several.
GPU_BACKENDS: tuple[GpuBackend, ...] = ("cuda", "metal", "vulkan")


def gpu_backends_in(library_folders: Iterable[Path]) -> set[GpuBackend]:
    """The GPU backends whose `libggml-<backend>` library lies in these folders."""
    names = {path.name for folder in library_folders if folder.is_dir()
             for path in folder.iterdir()}
    return {backend for backend in GPU_BACKENDS
            if any(name.startswith(f"libggml-{backend}.") for name in names)}


def library_folders() -> list[Path]:
    """Where llama-cpp-python loads its shared libraries from, as it finds them itself
    (`$LLAMA_CPP_LIB_PATH`, else its package's `lib`), without importing it; none when
    it is not installed."""
    spec = importlib.util.find_spec("llama_cpp")
    if spec is None:
        return []
    override = os.environ.get("LLAMA_CPP_LIB_PATH")
    if override:
        return [Path(override)]
    return [Path(package) / "lib" for package in spec.submodule_search_locations or []]


def libllama_present() -> bool:
    """Whether the installed llama-cpp-python carries libllama (a failed native build
    leaves the package without it, and the first model load fails)."""
    return any(path.name.startswith("libllama.") or path.name == "llama.dll"
               for folder in library_folders() if folder.is_dir()
               for path in folder.iterdir())


def built_ggml_version(folders: list[Path] | None = None) -> str | None:
    """ggml's version from its library's file name (`libggml.so.0.25.3`)."""
    for folder in library_folders() if folders is None else folders:
        if folder.is_dir():
            for path in folder.iterdir():
                found = re.fullmatch(r"libggml(?:\.so)?\.(\d+\.\d+\.\d+)(?:\.dylib)?", path.name)
                if found:
                    return found.group(1)
    return None


def native_versions() -> dict[str, str | None]:
    """The ggml this llama-cpp-python build carries (`Versions.ggml`)."""
    return {"ggml": built_ggml_version()}


def machine_checks() -> list[MachineCheck]:
    """`skulk doctor`'s checks of llama.cpp here (its build, RPC, GPU backend)."""
    from skulk.worker.engines.llama_cpp.doctor import llama_cpp_build
    return llama_cpp_build()


def built_gpu_backends() -> set[GpuBackend]:
    """The GPU backends the installed llama-cpp-python build carries: its wheel puts one
    library per ggml backend in `llama_cpp/lib` (found, not imported)."""
    return gpu_backends_in(library_folders())


def backend_tag(built: Collection[GpuBackend], gpus: Sequence[GpuDevice]) -> str:
    """`llama_cpp-<backend>` for the best backend both built in and backed by a GPU of
    this node, else `llama_cpp-cpu`."""
    present = {gpu.backend for gpu in gpus}
    for backend in GPU_BACKENDS:
        if backend in built and backend in present:
            return f"llama_cpp-{backend}"
    return "llama_cpp-cpu"


def probe_backend(_platform: str, gpus: Sequence[GpuDevice]) -> str | None:
    """llama-cpp-python's best backend on this node, when it is installed."""
    if importlib.util.find_spec("llama_cpp") is None:
        return None
    return backend_tag(built_gpu_backends(), gpus)


class LlamaCppOptions(EngineOptions):
    """What the worker tells a llama.cpp runner beyond the common options. A split instance
    runs the model on its head (rank 0), which offloads the later layers to the other
    ranks' devices, each served over ggml RPC, TLS between members inside llama.cpp's own
    sockets (`skulk.worker.rpc_channel`)."""

    max_batch: int = Field(default=LLAMA_CPP_FIT.default_batch, ge=1, le=64)
    """Requests decoded together in one context (llama.cpp sequences); 1 serves one
    request at a time. The instance's concurrency bound."""
    shared_kv: bool = True
    """On: the sequences share one context's KV cells (what placement reserves). A
    request's greedy text may then differ at near-ties from its text alone (attention sums
    over cells laid out by what else runs), and when the cells run short the youngest
    request pauses. Off: each sequence has a whole context's cells of its own (`max_batch`
    times the KV memory; the node reads it out in `kv_contexts` and placement reserves it)
    and, with flash attention, every
    request's output is bit-identical to its output alone."""
    flash_attention: bool = True
    """llama.cpp's fused attention kernels (llama-server's default on a CPU): ~10 % faster
    decoding here, and with cells of each sequence's own they do not depend on the other
    sequences in the batch (the plain kernels do, at near-ties). Off: the kernels of
    llama-cpp-python's `Llama` by default."""

    measured_width: bool = True
    """On: a step decodes as many of the decoding requests as cost least per token by
    this runner's own measured steps, and they take turns (`step_widths`); on one CPU
    thread that is often one at a time. Off: every decoding request in every step."""
    prefill_chunk: int = Field(default=512, ge=16)
    """Tokens per step's batch: prompts longer than this are prefilled over several steps
    while the other requests keep decoding."""
    gpu_layers: int = Field(default=0, ge=0)
    """How many of the shard's layers go to the GPU (llama.cpp's `n_gpu_layers`), chosen
    by the master from the node's free GPU memory; the rest run on the CPU. The shard's
    whole layer count means everything, output layer included."""
    rpc_servers: CommaSeparated = Field(default_factory=list)
    """The head's: where it reaches each other rank's device server (`host:port`, the
    rank's node and ring port), in rank order."""
    rpc_peers: CommaSeparated = Field(default_factory=list)
    """The head's, on a secure cluster: the node each of `rpc_servers` must be (its
    certificate must name it), in the same order."""
    rpc_layers: CommaSeparated = Field(default_factory=list)
    """The head's: how many layers each rank holds, in rank order (its own first)."""
    rpc_listen: str | None = Field(default=None, pattern=r"^\d{1,3}(\.\d{1,3}){3}:\d{1,5}$")
    """A device server's: the IPv4 `host:port` it listens on (its node's side-channel
    address and the rank's ring port)."""
    rpc_cache_dir: str | None = None
    """A device server's: where it keeps the tensors the head sends by hash, so a reload
    sends only hashes."""
    rpc_ca_certificate: str | None = None
    """On a secure cluster, the node's trust material (PEM paths): every ggml RPC link of
    the runner is then TLS with members only (`skulk.worker.rpc_channel`); none: plain
    TCP, as the rest of an `--insecure` cluster's plane."""
    rpc_certificate: str | None = None
    rpc_private_key: str | None = None
    rpc_revoked: CommaSeparated = Field(default_factory=list)
    """The nodes refused when the runner starts (later changes come as messages)."""

    def batch_size(self) -> int:
        return self.max_batch if self.batching else 1

    def kv_contexts(self) -> int:
        """Each sequence holds a whole context's cells of its own when `shared_kv` is off."""
        return 1 if self.shared_kv else self.batch_size()


# Its fit (formats, memory, shardings, the head running the model) is LLAMA_CPP_FIT.
LLAMA_CPP = EngineDescription(
    fit=LLAMA_CPP_FIT,
    engine_class="skulk.worker.engines.llama_cpp.engine:LlamaCppEngine",
    options=LlamaCppOptions,
    probe_backend=probe_backend,
    device_server_class="skulk.worker.engines.llama_cpp.device_server:LlamaDeviceServer",
    native_versions=native_versions,
    machine_checks=machine_checks,
)
