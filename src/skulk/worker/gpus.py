"""This node's GPUs, found through their drivers' command-line tools, never through a GPU
library loaded into the node process. A probe never raises and never hangs: a tool that
is missing, slow, failing or printing something unexpected means no GPU of that kind."""

import platform as host_platform
import re
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import anyio
import psutil

from skulk.shared.types.telemetry import GpuDevice

MIB = 1024**2
PROBE_TIMEOUT_SECONDS = 3.0
MAX_GPUS = 16  # NodeTelemetry.gpus' bound

# A command's standard output, or None when it is missing, failed or timed out.
CommandRunner = Callable[[Sequence[str]], str | None]

NVIDIA_SMI = ("nvidia-smi", "--query-gpu=name,memory.total,memory.free",
              "--format=csv,noheader,nounits")
VULKAN_SUMMARY = ("vulkaninfo", "--summary")
APPLE_CHIP_NAME = ("sysctl", "-n", "machdep.cpu.brand_string")

# Metal lets the GPU wire about two thirds (small Macs) to three quarters (large ones) of
# system memory: its `recommendedMaxWorkingSetSize`. Without loading Metal we report 3/4,
# the share placement already caps unified-memory hosts at.
METAL_WORKING_SET_FRACTION = 0.75

SYSFS_DRM = Path("/sys/class/drm")


def run_command(argv: Sequence[str]) -> str | None:
    """The command's standard output, or None when it could not run, failed or took
    longer than `PROBE_TIMEOUT_SECONDS` (it is killed then)."""
    try:
        done = subprocess.run(list(argv), capture_output=True, text=True, check=False,
                              timeout=PROBE_TIMEOUT_SECONDS)
    except (OSError, subprocess.SubprocessError, ValueError):
        return None
    return done.stdout if done.returncode == 0 else None


def parse_nvidia_smi(output: str) -> list[GpuDevice]:
    """One device per `name, total MiB, free MiB` line; lines that are not skipped."""
    devices = []
    for line in output.splitlines():
        parts = [part.strip() for part in line.rsplit(",", 2)]  # a name may hold commas
        if len(parts) != 3 or not parts[0]:
            continue
        try:
            total, free = int(parts[1]), int(parts[2])
        except ValueError:  # `[N/A]`, `[Unknown Error]`
            continue
        if total < 0 or free < 0:
            continue
        devices.append(GpuDevice(name=parts[0][:256], backend="cuda",
                                 vram_total_bytes=total * MIB,
                                 vram_free_bytes=min(free, total) * MIB))
    return devices


def cuda_gpus(run: CommandRunner) -> list[GpuDevice]:
    """NVIDIA GPUs as `nvidia-smi` lists them."""
    output = run(NVIDIA_SMI)
    return [] if output is None else parse_nvidia_smi(output)


def apple_gpu(run: CommandRunner, memory_total: int, memory_available: int
              ) -> list[GpuDevice]:
    """Apple silicon's GPU. Its memory is the system's: total is
    `METAL_WORKING_SET_FRACTION` of RAM, free is what the system has available up to it."""
    name = (run(APPLE_CHIP_NAME) or "").strip() or "Apple silicon GPU"
    total = int(memory_total * METAL_WORKING_SET_FRACTION)
    return [GpuDevice(name=name[:256], backend="metal", vram_total_bytes=total,
                      vram_free_bytes=max(0, min(memory_available, total)))]


_GPU_HEADER = re.compile(r"^GPU\d+:\s*$")
_FIELD = re.compile(r"^\s*(\w+)\s*=\s*(.*?)\s*$")


def parse_vulkan_summary(output: str) -> list[dict[str, str]]:
    """The fields (`deviceName`, `deviceType`, `vendorID`, `deviceID`...) of each `GPUn:`
    section of `vulkaninfo --summary`. It prints no memory sizes."""
    sections: list[dict[str, str]] = []
    for line in output.splitlines():
        if _GPU_HEADER.match(line):
            sections.append({})
        elif sections and (field := _FIELD.match(line)):
            sections[-1][field.group(1)] = field.group(2)
    return [s for s in sections if s.get("deviceName")]


def amdgpu_memory(sysfs: Path, vendor: str, device: str) -> tuple[int, int] | None:
    """(total, free) VRAM of the amdgpu card with these PCI ids, from sysfs, if any."""
    try:
        for card in sorted(sysfs.glob("card*/device")):
            ids = ((card / "vendor").read_text().strip(), (card / "device").read_text().strip())
            if ids != (vendor.lower(), device.lower()):
                continue
            total = int((card / "mem_info_vram_total").read_text())
            used = int((card / "mem_info_vram_used").read_text())
            return total, max(0, total - used)
    except (OSError, ValueError):
        return None
    return None


def vulkan_gpus(run: CommandRunner, cuda: Sequence[GpuDevice], sysfs: Path
                ) -> list[GpuDevice]:
    """Vulkan's hardware GPUs (software renderers left out). Memory comes from amdgpu's
    sysfs files, or from `nvidia-smi` for a GPU of the same name; otherwise it is reported
    as 0 (unknown) and placement offloads nothing to it."""
    output = run(VULKAN_SUMMARY)
    if output is None:
        return []
    by_name = {gpu.name: gpu for gpu in cuda}
    devices = []
    for fields in parse_vulkan_summary(output):
        if fields.get("deviceType", "").endswith("_CPU"):  # llvmpipe and the like
            continue
        name = fields["deviceName"][:256]
        memory = amdgpu_memory(sysfs, fields.get("vendorID", ""), fields.get("deviceID", ""))
        if memory is None and name in by_name:
            memory = by_name[name].vram_total_bytes, by_name[name].vram_free_bytes
        total, free = memory or (0, 0)
        devices.append(GpuDevice(name=name, backend="vulkan", vram_total_bytes=total,
                                 vram_free_bytes=free))
    return devices


def probe_gpus(platform: str = sys.platform, *, machine: str | None = None,
               run: CommandRunner = run_command, sysfs: Path = SYSFS_DRM,
               memory: Callable[[], tuple[int, int]] | None = None) -> list[GpuDevice]:
    """Every GPU this node has, by the backend that can use it (one GPU may appear under
    both `cuda` and `vulkan`), at most `MAX_GPUS`. Never raises: none found is `[]`."""
    try:
        if platform == "darwin":
            if (machine or host_platform.machine()) != "arm64":
                return []  # an Intel Mac's GPUs are not offered to llama.cpp
            total, available = (memory or _system_memory)()
            return apple_gpu(run, total, available)
        cuda = cuda_gpus(run)
        return [*cuda, *vulkan_gpus(run, cuda, sysfs)][:MAX_GPUS]
    except Exception:  # a probe's failure must never stop the node: no GPU then
        return []


def _system_memory() -> tuple[int, int]:
    memory = psutil.virtual_memory()
    return memory.total, memory.available


GPU_REFRESH_SECONDS = 5.0


async def refresh_gpus_forever(keep: Callable[[list[GpuDevice]], None],
                               probe: Callable[[], list[GpuDevice]] = probe_gpus,
                               interval: float = GPU_REFRESH_SECONDS) -> None:
    """Every `interval` seconds, probe again (in a thread: the tools take a moment) and
    hand the devices, with their free memory now, to `keep`."""
    while True:
        await anyio.sleep(interval)
        keep(await anyio.to_thread.run_sync(probe))
