"""What goes into the GPU bundle, decided from plain data: which of Skulk's runtime
requirements the llama.cpp path needs, which wheels suit the device's Python, which
files of llama.cpp's sources its CUDA build reads, and whether it all fits what travels.

The device (the `device` tool's `nvidia-h200` kind) runs Python 3.12 on x86-64 Linux with
no network; a command takes at most 64 MiB along, the working tree included."""

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import PurePosixPath

from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

MIB = 1024**2
TRAVEL_LIMIT_BYTES = 64 * MIB
# Room kept free under the limit: the tree grows between `make gpu-bundle` and the run.
HEADROOM_BYTES = 4 * MIB

DEVICE_PYTHON = "3.12"
DEVICE_PLATFORMS = tuple(f"manylinux_2_{n}_x86_64" for n in (17, 24, 27, 28, 31, 34, 35)) + (
    "manylinux2014_x86_64", "manylinux2010_x86_64", "manylinux1_x86_64", "linux_x86_64")

# Left out: MLX runs on Apple silicon (and the CPU on Linux), not on the llama.cpp path;
# llama-cpp-python is built on the device from its sources (a slim wheel carries its
# Python package, the build its libraries).
NOT_ON_THE_LLAMA_PATH = frozenset({"mlx", "mlx-lm", "llama-cpp-python"})
# llama-cpp-python's own requirements (its slim wheel is installed without them), and the
# checks' client.
FOR_THE_CHECKS = ("diskcache", "typing-extensions", "openai")
# In the device's image already (the device tool's KINDS.md lists them) and large:
# carrying them would not fit. numpy 16 MiB, uvloop 4.5 MiB, hf-xet 4 MiB (the hub's
# downloads only; never imported on the device).
DEVICE_PROVIDED = frozenset({"numpy", "uvloop", "hf-xet"})

# Parts of llama.cpp's sources its build here reads none of: documentation, tests,
# examples, vocabularies for tests, the web UI's sources (the server is built without it),
# and the backends other than the CPU's, CUDA's and RPC's.
UNUSED_SOURCE_DIRS = frozenset({
    "docs", "models", "tests", "examples", "benches", "media", "gguf-py", "conversion",
    ".github", ".devops", "ci", "pocs", "skills", ".gemini", ".pi", "licenses",
    "requirements", "grammars",
    ".git",  # a submodule's pointer: CMake's version lookup would follow it nowhere
})
UNUSED_BACKENDS = frozenset({
    "ggml-sycl", "ggml-vulkan", "ggml-opencl", "ggml-hexagon", "ggml-metal", "ggml-et",
    "ggml-webgpu", "ggml-openvino", "ggml-cann", "ggml-virtgpu", "ggml-zdnn", "ggml-musa",
    "ggml-hip", "ggml-kompute", "ggml-blas", "ggml-zendnn",
})


def llama_path_requirements(dependencies: Iterable[str]) -> list[str]:
    """The names of pyproject's runtime requirements that apply on the device (Linux,
    Python 3.12) and that the llama.cpp path needs, plus `FOR_THE_CHECKS`, canonical and
    sorted."""
    environment = {key: str(value) for key, value in default_environment().items()}
    environment.update(sys_platform="linux", platform_system="Linux",
                       python_version=DEVICE_PYTHON, platform_machine="x86_64")
    names = set(map(canonicalize_name, FOR_THE_CHECKS))
    for line in dependencies:
        requirement = Requirement(line)
        if requirement.marker is not None and not requirement.marker.evaluate(environment):
            continue
        names.add(canonicalize_name(requirement.name))
    return sorted(names - NOT_ON_THE_LLAMA_PATH)


_WHEEL = re.compile(r"^(?P<name>[^-]+)-(?P<version>[^-]+)(-\d[^-]*)?-(?P<python>[^-]+)"
                    r"-(?P<abi>[^-]+)-(?P<platform>[^-]+)\.whl$")


@dataclass(frozen=True)
class WheelName:
    name: str
    version: str
    python: str
    abi: str
    platform: str


def wheel_name(filename: str) -> WheelName:
    """The parts of a wheel's file name (PEP 427); raises ValueError on anything else."""
    found = _WHEEL.match(filename)
    if found is None:
        raise ValueError(f"{filename} is not a wheel's file name")
    return WheelName(canonicalize_name(found["name"]), found["version"], found["python"],
                     found["abi"], found["platform"])


def suits_device(filename: str) -> bool:
    """Whether pip on the device's CPython 3.12, x86-64 Linux, installs this wheel: a
    pure one, a cp312 one, or a stable-ABI one for 3.12 or older, for a Linux x86-64
    platform it accepts."""
    wheel = wheel_name(filename)
    platforms = set(wheel.platform.split("."))
    if not ("any" in platforms or platforms & set(DEVICE_PLATFORMS)):
        return False
    pythons = wheel.python.split(".")
    if wheel.abi == "none":
        return any(p in ("py3", "cp312") for p in pythons)
    if wheel.abi == "abi3":
        return any(p.startswith("cp3") and int(p[3:]) <= 12 for p in pythons)
    return wheel.abi == "cp312" and "cp312" in pythons


def carried(filenames: Iterable[str]) -> list[str]:
    """The downloaded wheels that travel: those the device does not have already. Two
    versions of one package stop the device's install, so that raises."""
    kept: dict[str, str] = {}
    for filename in sorted(filenames):
        wheel = wheel_name(filename)
        if wheel.name in DEVICE_PROVIDED:
            continue
        if not suits_device(filename):
            raise ValueError(f"{filename} does not install on the device's Python "
                             f"{DEVICE_PYTHON} (x86-64 Linux)")
        if wheel.name in kept:
            raise ValueError(f"two versions of {wheel.name}: {kept[wheel.name]}, {filename}")
        kept[wheel.name] = filename
    return sorted(kept.values())


def keeps_source(relative: str) -> bool:
    """Whether a file of the sdist's `vendor/llama.cpp/` (path relative to it) goes into
    the bundle's sources."""
    parts = PurePosixPath(relative).parts
    if not parts or parts[0] in UNUSED_SOURCE_DIRS:
        return False
    if parts[:2] == ("ggml", "src") and len(parts) > 2 and parts[2] in UNUSED_BACKENDS:
        return False
    if parts[:2] == ("tools", "ui"):
        # The target and the templates of its generated sources; not the web app, whose
        # assets are neither built nor downloaded (the server runs without them).
        return len(parts) == 3 and (parts[2] in ("CMakeLists.txt", "sources.cmake")
                                    or parts[2].endswith(".in"))
    return True


@dataclass(frozen=True)
class Budget:
    tree_bytes: int
    bundle_bytes: int
    limit_bytes: int = TRAVEL_LIMIT_BYTES
    headroom_bytes: int = HEADROOM_BYTES

    @property
    def total_bytes(self) -> int:
        return self.tree_bytes + self.bundle_bytes

    @property
    def fits(self) -> bool:
        return self.total_bytes + self.headroom_bytes <= self.limit_bytes

    def describe(self) -> str:
        return (f"tree {self.tree_bytes / MIB:.1f} MiB + bundle {self.bundle_bytes / MIB:.1f} "
                f"MiB = {self.total_bytes / MIB:.1f} MiB of {self.limit_bytes / MIB:.0f} MiB "
                f"({self.headroom_bytes / MIB:.0f} MiB kept free): "
                + ("fits" if self.fits else "does NOT fit"))
