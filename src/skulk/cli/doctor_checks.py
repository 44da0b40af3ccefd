"""`skulk doctor`'s checks of this machine: each one looks at one thing that would slow
or break a node here and, when it is wrong, says how to fix it."""

import platform as host_platform
import shutil
import socket
import struct
import sys
import tempfile
from pathlib import Path

import psutil

from skulk.cli.doctor_native import native_core
from skulk.cli.ports import port_holder, port_in_use
from skulk.worker.engine_threads import threads_explained
from skulk.worker.engines.machine_check import Level
from skulk.worker.engines.machine_check import MachineCheck as Check
from skulk.worker.engines.registry import PLACEABLE

__all__ = ["Check", "Level", "machine_checks"]

GIB = 1024**3
# Zenoh's scouting group: discovery of peers on the LAN joins it.
SCOUTING_GROUP = "224.0.0.224"


def python_version(version: tuple[int, int] = sys.version_info[:2]) -> Check:
    text = f"{version[0]}.{version[1]}"
    if version >= (3, 11):
        return Check("Python", "OK", text)
    return Check("Python", "FAIL", f"{text}: Skulk needs 3.11 or newer",
                 "install Python 3.11+ and run `make install` with it")


def cpu_features(cpuinfo: Path = Path("/proc/cpuinfo"), machine: str | None = None) -> Check:
    """The vector instructions llama.cpp's CPU kernels are fast with."""
    arch = machine or host_platform.machine()
    if arch not in ("x86_64", "AMD64") or not cpuinfo.exists():
        return Check("CPU", "OK", f"{arch}, {psutil.cpu_count()} threads")
    flags = next((line.split(":", 1)[1].split() for line in cpuinfo.read_text().splitlines()
                  if line.startswith("flags")), [])
    wanted = [flag for flag in ("avx2", "fma", "f16c", "avx512f") if flag in flags]
    detail = f"{psutil.cpu_count()} threads, {' '.join(wanted) or 'no AVX2/FMA'}"
    if "avx2" not in flags:
        return Check("CPU", "WARN", detail + ": llama.cpp runs several times slower",
                     "use a machine with AVX2 for serving, or keep this one --no-worker")
    return Check("CPU", "OK", detail)


def free_memory(available: int | None = None) -> Check:
    free = psutil.virtual_memory().available if available is None else available
    detail = f"{free / GIB:.1f} GiB available"
    if free < GIB:
        return Check("memory", "FAIL", detail + ": not even the smallest model fits",
                     "close other programs, or run this node --no-worker")
    if free < 4 * GIB:
        return Check("memory", "WARN", detail + ": only small models fit",
                     "close other programs; larger models need more nodes")
    return Check("memory", "OK", detail)


def data_dir(path: Path) -> list[Check]:
    """The data dir (or the folder it would be made in) takes files and has room."""
    existing = next(p for p in (path, *path.parents) if p.exists())
    try:
        with tempfile.TemporaryFile(dir=existing):
            pass
    except OSError as error:
        return [Check("data dir", "FAIL", f"{existing} is not writable ({error.strerror})",
                      "choose another with --data-dir or $SKULK_HOME")]
    free = shutil.disk_usage(existing).free
    detail = f"{path}: {free / GIB:.1f} GiB free"
    if free < GIB:
        return [Check("data dir", "FAIL", detail, "free disk space or choose --data-dir")]
    if free < 10 * GIB:
        return [Check("data dir", "WARN", detail + ": room for small models only",
                      "free disk space or choose --data-dir on a larger disk")]
    return [Check("data dir", "OK", detail)]


def port_free(port: int, what: str, flag: str, host: str = "0.0.0.0") -> Check:
    name = f"{what} port {port}"
    if not port_in_use(host, port):
        return Check(name, "OK", "free")
    holder = port_holder(port)
    if holder and holder.startswith("skulk"):
        return Check(name, "WARN", f"held by {holder}",
                     f"a second node on this machine needs another {flag}")
    return Check(name, "FAIL", f"in use{f' by {holder}' if holder else ''}",
                 f"stop it, or start skulk with another {flag}")


def multicast_discovery() -> Check:
    """Whether this machine can join Zenoh's scouting group (LAN discovery)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            membership = struct.pack("4s4s", socket.inet_aton(SCOUTING_GROUP),
                                      socket.inet_aton("0.0.0.0"))
            probe.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP, membership)
        except OSError as error:
            return Check("discovery", "WARN", f"no multicast ({error.strerror})",
                         "give each node --peer tcp/HOST:PORT of another")
    return Check("discovery", "OK", f"multicast group {SCOUTING_GROUP} joinable")


def engine_threads() -> Check:
    """The compute threads a runner here takes without `--threads`."""
    return Check("engine threads", "OK", f"{threads_explained(serves_api=True)} by default "
                 "(--threads N sets it; a --no-api node keeps every physical core)")


def engine_checks() -> list[Check]:
    """Each engine's own checks, as its description declares them."""
    return [check for engine in PLACEABLE for check in engine.machine_checks()]


def machine_checks(data_dir_path: Path, ports: list[tuple[int, str, str]]) -> list[Check]:
    """Every check of this machine; `ports`: (port, what, flag) to find free."""
    return [python_version(), *native_core(), *engine_checks(), cpu_features(),
            engine_threads(),
            free_memory(), *data_dir(data_dir_path),
            *(port_free(port, what, flag) for port, what, flag in ports),
            multicast_discovery()]
