"""The one typed doorway to ggml RPC, the remote-device backend llama.cpp splits a model
over: `libggml-rpc` from llama-cpp-python's wheel (built with `-DGGML_RPC=on`, see
tools/llama-cpp-backends.sh), reached through ctypes because llama-cpp-python binds
none of it.

A rank other than the head serves its device with `serve_device` (it never returns); the
head registers those servers with `register_servers` before it loads the model, and
llama.cpp then offloads layers to them like to GPUs. ggml RPC has no authentication: on a
secure cluster both ends first install Skulk's channel (`channel_setter`,
`skulk.worker.rpc_channel`), so every link is TLS between members.
"""

import ctypes
import os
import pathlib
import sys

import llama_cpp
import llama_cpp.llama_cpp  # loads libllama and the ggml libraries it uses, which we share

# enum ggml_backend_dev_type (ggml-backend.h)
_DEVICE_CPU = 0
_DEVICE_GPU = 1

_SUFFIX = ".dylib" if sys.platform == "darwin" else ".so"


class RpcUnavailable(RuntimeError):
    """This llama-cpp-python build has no ggml RPC backend."""


def library_dir() -> pathlib.Path:
    """Where llama-cpp-python keeps its shared libraries (as it finds them itself)."""
    override = os.environ.get("LLAMA_CPP_LIB_PATH")
    if override:
        return pathlib.Path(override)
    return pathlib.Path(llama_cpp.__file__).parent / "lib"


def _shared() -> ctypes.CDLL:
    """libllama as llama-cpp-python loaded it: looking symbols up through its handle finds
    them in the very ggml libraries libllama uses (`libggml.so.0`, `libggml-rpc.so.0`).
    Opening `libggml.so` by name would load a second copy of ggml (the wheel holds each
    library under several names, as files, not links) with a device registry of its own
    that libllama never reads."""
    if not rpc_available():
        raise RpcUnavailable(
            f"{library_dir()} holds no libggml-rpc: llama-cpp-python was built without ggml "
            "RPC; rebuild it with `tools/llama-cpp-backends.sh .venv/bin/python` (or "
            "`make install`)")
    lib: ctypes.CDLL = llama_cpp.llama_cpp._lib
    lib.ggml_backend_dev_by_type.argtypes = [ctypes.c_int]
    lib.ggml_backend_dev_by_type.restype = ctypes.c_void_p
    lib.ggml_backend_dev_count.argtypes = []
    lib.ggml_backend_dev_count.restype = ctypes.c_size_t
    lib.ggml_backend_register.argtypes = [ctypes.c_void_p]
    lib.ggml_backend_register.restype = None
    lib.ggml_backend_reg_dev_count.argtypes = [ctypes.c_void_p]
    lib.ggml_backend_reg_dev_count.restype = ctypes.c_size_t
    lib.ggml_backend_rpc_start_server.argtypes = [
        ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_size_t,
        ctypes.POINTER(ctypes.c_void_p)]
    lib.ggml_backend_rpc_start_server.restype = None
    lib.ggml_backend_rpc_add_server.argtypes = [ctypes.c_char_p]
    lib.ggml_backend_rpc_add_server.restype = ctypes.c_void_p
    return lib


def channel_setter() -> int:
    """The address of `ggml_backend_rpc_set_channel` (Skulk's patch,
    tools/patches/ggml-rpc-secure-channel.patch) in the ggml RPC library libllama uses."""
    lib = _shared()
    try:
        setter = lib.ggml_backend_rpc_set_channel
    except AttributeError:
        raise RpcUnavailable(
            "this llama-cpp-python build lacks Skulk's ggml RPC secure channel, which a "
            "split on a secure cluster needs: rebuild it with "
            "`tools/llama-cpp-backends.sh .venv/bin/python` (or `make install`)") from None
    address = ctypes.cast(setter, ctypes.c_void_p).value
    assert address is not None
    return address


def rpc_available() -> bool:
    """Whether this llama-cpp-python build can split a model over ggml RPC."""
    return any(library_dir().glob(f"libggml-rpc{_SUFFIX}*"))


def device_count() -> int:
    """How many compute devices llama.cpp sees in this process (remote ones included)."""
    count: int = _shared().ggml_backend_dev_count()
    return count


def serve_device(endpoint: str, cache_dir: str, threads: int) -> None:
    """Serve this machine's compute device (its GPU if llama.cpp sees one, else the CPU)
    to one head at a time on `endpoint` (`host:port`, IPv4); returns only if the server
    could not start. Tensors the head sends by hash are cached in `cache_dir`."""
    lib = _shared()
    device = lib.ggml_backend_dev_by_type(_DEVICE_GPU) or lib.ggml_backend_dev_by_type(
        _DEVICE_CPU)
    if not device:
        raise RpcUnavailable("llama.cpp sees no device to serve")
    devices = (ctypes.c_void_p * 1)(device)
    lib.ggml_backend_rpc_start_server(endpoint.encode(), cache_dir.encode(), threads, 1,
                                      devices)


def register_servers(endpoints: list[str]) -> None:
    """Make each server's devices available to the models loaded after this, in order
    (llama.cpp puts remote devices before local GPUs). Every endpoint must answer: ggml
    aborts the process when a server it was given cannot be reached."""
    lib = _shared()
    before = device_count()
    added = 0
    for endpoint in endpoints:
        registry = lib.ggml_backend_rpc_add_server(endpoint.encode())
        if not registry or lib.ggml_backend_reg_dev_count(registry) == 0:
            raise RpcUnavailable(f"the ggml RPC server at {endpoint} offers no device")
        lib.ggml_backend_register(registry)
        added += lib.ggml_backend_reg_dev_count(registry)
    if device_count() != before + added:
        raise RpcUnavailable(f"registered {added} remote device(s) but llama.cpp sees "
                             f"{device_count() - before}: the ggml RPC backend is not the "
                             "one libllama uses")
