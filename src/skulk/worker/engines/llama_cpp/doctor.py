"""`skulk doctor`'s checks of the llama.cpp engine on this machine (its description names
them): installed with its library, with ggml RPC and Skulk's secure channel for it, and
with this machine's GPU backend."""

import importlib.util

from skulk.worker.engines.llama_cpp.description import (
    built_gpu_backends,
    libllama_present,
    library_folders,
)
from skulk.worker.engines.machine_check import MachineCheck
from skulk.worker.gpus import probe_gpus

REBUILD_LLAMA = "tools/llama-cpp-backends.sh .venv/bin/python"
REBUILD = f"rebuild it with `make install`, or `{REBUILD_LLAMA}`"


def llama_cpp_build() -> list[MachineCheck]:
    """Installed with its library, with ggml RPC, and with this machine's GPU backend."""
    if importlib.util.find_spec("llama_cpp") is None:
        return [MachineCheck("llama.cpp", "WARN",
                             "llama-cpp-python is not installed: no GGUF models",
                             REBUILD.replace("rebuild it", "install it"))]
    if not libllama_present():
        return [MachineCheck("llama.cpp", "FAIL",
                             "llama-cpp-python has no libllama (failed build?)", REBUILD)]
    checks = [MachineCheck("llama.cpp", "OK", f"libraries in {library_folders()[0]}")]
    rpc = any((folder / name).exists() for folder in library_folders()
              for name in ("libggml-rpc.so", "libggml-rpc.dylib"))
    checks.append(MachineCheck("llama.cpp RPC", "OK", "built: models split over nodes") if rpc
                  else MachineCheck("llama.cpp RPC", "WARN", "built without ggml RPC: a GGUF "
                                    "model cannot be split over several nodes",
                                    f"rebuild with `{REBUILD_LLAMA}`"))
    if rpc:
        checks.append(secure_channel())
    built = built_gpu_backends()
    present = {gpu.backend for gpu in probe_gpus()}
    usable = built & present
    if usable:
        checks.append(MachineCheck("llama.cpp GPU", "OK", f"{', '.join(sorted(usable))}"))
    elif present:
        checks.append(MachineCheck("llama.cpp GPU", "WARN", f"this machine has a "
                                   f"{'/'.join(sorted(present))} GPU but the build lacks "
                                   "its backend", f"rebuild with `{REBUILD_LLAMA}`"))
    else:
        checks.append(MachineCheck("llama.cpp GPU", "OK", "no GPU found: models run on the CPU"))
    return checks


def secure_channel() -> MachineCheck:
    """Whether the build carries Skulk's ggml RPC secure channel (tools/patches), which a
    split on a secure cluster links its ranks through."""
    from skulk.worker.engines.llama_cpp import rpc_lib  # loads libllama: only when asked
    try:
        rpc_lib.channel_setter()
    except rpc_lib.RpcUnavailable:
        return MachineCheck("llama.cpp RPC TLS", "WARN", "built without Skulk's ggml RPC "
                            "secure channel: a split on a secure cluster cannot link its "
                            "ranks", f"rebuild with `{REBUILD_LLAMA}`")
    return MachineCheck("llama.cpp RPC TLS", "OK",
                        "Skulk's secure channel: split ranks link by TLS between members")
