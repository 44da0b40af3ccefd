import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

import anyio
import pytest

from skulk.shared.types.telemetry import GpuDevice
from skulk.worker import gpus
from skulk.worker.gpus import (
    APPLE_CHIP_NAME,
    MIB,
    NVIDIA_SMI,
    VULKAN_SUMMARY,
    parse_nvidia_smi,
    probe_gpus,
    refresh_gpus_forever,
    run_command,
)

GIB = 1024**3

VULKAN = """\
==========
VULKANINFO
==========

Devices:
========
GPU0:
\tapiVersion         = 1.3.255
\tvendorID           = 0x1002
\tdeviceID           = 0x744c
\tdeviceType         = PHYSICAL_DEVICE_TYPE_DISCRETE_GPU
\tdeviceName         = AMD Radeon RX 7900 XTX (RADV NAVI31)
GPU1:
\tvendorID           = 0x10de
\tdeviceID           = 0x2684
\tdeviceType         = PHYSICAL_DEVICE_TYPE_DISCRETE_GPU
\tdeviceName         = NVIDIA GeForce RTX 4090
GPU2:
\tvendorID           = 0x10005
\tdeviceID           = 0x0000
\tdeviceType         = PHYSICAL_DEVICE_TYPE_CPU
\tdeviceName         = llvmpipe (LLVM 15.0.7, 256 bits)
"""


def fake_runner(outputs: Mapping[tuple[str, ...], str]) -> gpus.CommandRunner:
    """A runner that prints the given output for known commands and fails the rest."""
    def run(argv: Sequence[str]) -> str | None:
        return outputs.get(tuple(argv))
    return run


def test_nvidia_smi_lines_become_cuda_devices_in_bytes() -> None:
    output = "NVIDIA GeForce RTX 4090, 24564, 23000\nTesla T4, 15360, 15100\n"
    assert parse_nvidia_smi(output) == [
        GpuDevice(name="NVIDIA GeForce RTX 4090", backend="cuda",
                  vram_total_bytes=24564 * MIB, vram_free_bytes=23000 * MIB),
        GpuDevice(name="Tesla T4", backend="cuda", vram_total_bytes=15360 * MIB,
                  vram_free_bytes=15100 * MIB)]


@pytest.mark.parametrize("output", [
    "", "garbage", "NVIDIA A100, [N/A], [N/A]", ", 100, 50", "GPU, -5, 3",
    "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver",
])
def test_malformed_nvidia_smi_lines_are_skipped(output: str) -> None:
    assert parse_nvidia_smi(output + "\nGood GPU, 1024, 512") == [
        GpuDevice(name="Good GPU", backend="cuda", vram_total_bytes=GIB,
                  vram_free_bytes=512 * MIB)]


def test_a_name_with_commas_and_free_above_total_are_tolerated() -> None:
    [device] = parse_nvidia_smi("Odd, Inc. GPU, 100, 120")
    assert device.name == "Odd, Inc. GPU" and device.vram_free_bytes == 100 * MIB


def test_no_tool_no_gpu() -> None:
    assert probe_gpus("linux", run=fake_runner({}), sysfs=Path("/nonexistent")) == []


def test_vulkan_devices_take_memory_from_amdgpu_sysfs_or_nvidia_smi(tmp_path: Path) -> None:
    card = tmp_path / "card0" / "device"
    card.mkdir(parents=True)
    for name, value in {"vendor": "0x1002", "device": "0x744c",
                        "mem_info_vram_total": str(24 * GIB),
                        "mem_info_vram_used": str(4 * GIB)}.items():
        (card / name).write_text(value + "\n")
    run = fake_runner({VULKAN_SUMMARY: VULKAN,
                       NVIDIA_SMI: "NVIDIA GeForce RTX 4090, 24564, 23000"})
    found = probe_gpus("linux", run=run, sysfs=tmp_path)
    assert [(g.backend, g.name, g.vram_total_bytes, g.vram_free_bytes) for g in found] == [
        ("cuda", "NVIDIA GeForce RTX 4090", 24564 * MIB, 23000 * MIB),
        ("vulkan", "AMD Radeon RX 7900 XTX (RADV NAVI31)", 24 * GIB, 20 * GIB),
        ("vulkan", "NVIDIA GeForce RTX 4090", 24564 * MIB, 23000 * MIB)]


def test_a_vulkan_gpu_of_unknown_memory_is_reported_with_none() -> None:
    found = probe_gpus("linux", run=fake_runner({VULKAN_SUMMARY: VULKAN}),
                       sysfs=Path("/nonexistent"))
    assert [(g.name[:3], g.vram_total_bytes) for g in found] == [("AMD", 0), ("NVI", 0)]


@pytest.mark.parametrize("output", ["", "GPU0:\n", "nonsense = 1\n", "GPU0:\n\tbroken line"])
def test_malformed_vulkan_output_finds_nothing(output: str) -> None:
    run = fake_runner({VULKAN_SUMMARY: output})
    assert probe_gpus("linux", run=run, sysfs=Path("/nonexistent")) == []


def test_apple_silicon_reports_its_gpu_as_a_share_of_system_memory() -> None:
    run = fake_runner({APPLE_CHIP_NAME: "Apple M2 Pro\n"})
    [gpu] = probe_gpus("darwin", machine="arm64", run=run,
                       memory=lambda: (32 * GIB, 30 * GIB))
    assert gpu == GpuDevice(name="Apple M2 Pro", backend="metal",
                            vram_total_bytes=24 * GIB, vram_free_bytes=24 * GIB)


def test_an_intel_mac_reports_no_gpu() -> None:
    assert probe_gpus("darwin", machine="x86_64", run=fake_runner({})) == []


def test_a_probe_that_raises_finds_nothing() -> None:
    def broken(_argv: Sequence[str]) -> str | None:
        raise RuntimeError("surprise")
    assert probe_gpus("linux", run=broken) == []


def test_a_missing_failing_or_slow_command_gives_none(monkeypatch: pytest.MonkeyPatch) -> None:
    assert run_command(["/nonexistent/nvidia-smi"]) is None
    assert run_command([sys.executable, "-c", "import sys; sys.exit(3)"]) is None
    monkeypatch.setattr(gpus, "PROBE_TIMEOUT_SECONDS", 0.2)
    started = time.monotonic()
    assert run_command([sys.executable, "-c", "import time; time.sleep(30)"]) is None
    assert time.monotonic() - started < 10
    assert run_command([sys.executable, "-c", "print('ok')"]) == "ok\n"


def test_refresh_hands_over_each_new_probe() -> None:
    seen: list[list[GpuDevice]] = []
    device = GpuDevice(name="g", backend="cuda", vram_total_bytes=2, vram_free_bytes=1)

    async def main() -> None:
        with anyio.move_on_after(0.5):
            await refresh_gpus_forever(seen.append, lambda: [device], interval=0.05)

    anyio.run(main)
    assert len(seen) >= 2 and seen[0] == [device]
