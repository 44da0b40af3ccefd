"""What `nvidia-smi` says about the GPUs and the processes holding their memory: the
figures the check compares Skulk's own telemetry and VRAM admission against."""

import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass

MIB = 1024**2
GPU_QUERY = ("nvidia-smi", "--query-gpu=name,compute_cap,memory.total,memory.used",
             "--format=csv,noheader,nounits")
APPS_QUERY = ("nvidia-smi", "--query-compute-apps=pid,used_memory",
              "--format=csv,noheader,nounits")

# A command's standard output, None when it is missing or failed.
Runner = Callable[[Sequence[str]], str | None]


@dataclass(frozen=True)
class NvidiaGpu:
    name: str
    compute_capability: str  # "9.0"
    total_bytes: int
    used_bytes: int

    @property
    def cuda_architecture(self) -> str:
        """CMake's CMAKE_CUDA_ARCHITECTURES for this GPU alone: "9.0" -> "90"."""
        return cuda_architecture(self.compute_capability)


def cuda_architecture(compute_capability: str) -> str:
    major, _, minor = compute_capability.strip().partition(".")
    if not (major.isdigit() and minor.isdigit()):
        raise ValueError(f"not a compute capability: {compute_capability!r}")
    return f"{major}{minor}"


def parse_gpus(output: str) -> list[NvidiaGpu]:
    """One GPU per `name, compute_cap, total MiB, used MiB` line; others skipped (a name
    may hold commas, so the fields are taken from the right)."""
    gpus = []
    for line in output.splitlines():
        parts = [part.strip() for part in line.rsplit(",", 3)]
        if len(parts) != 4 or not parts[0]:
            continue
        try:
            total, used = int(parts[2]), int(parts[3])
            cuda_architecture(parts[1])
        except ValueError:  # `[N/A]`
            continue
        gpus.append(NvidiaGpu(parts[0], parts[1], total * MIB, used * MIB))
    return gpus


def parse_apps(output: str) -> dict[int, int]:
    """GPU memory in bytes by process id, from the compute-apps query."""
    apps: dict[int, int] = {}
    for line in output.splitlines():
        pid, _, used = (part.strip() for part in line.partition(","))
        if pid.isdigit() and used.isdigit():
            apps[int(pid)] = apps.get(int(pid), 0) + int(used) * MIB
    return apps


def run(argv: Sequence[str]) -> str | None:
    try:
        done = subprocess.run(list(argv), capture_output=True, text=True, timeout=10,
                              check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None


def gpus(runner: Runner = run) -> list[NvidiaGpu]:
    output = runner(GPU_QUERY)
    return [] if output is None else parse_gpus(output)


def apps(runner: Runner = run) -> dict[int, int]:
    output = runner(APPS_QUERY)
    return {} if output is None else parse_apps(output)


if __name__ == "__main__":
    # `python -m bench.gpu_check.nvidia`: the first GPU's CUDA architecture, for CMake.
    found = gpus()
    if not found:
        sys.exit("nvidia-smi lists no GPU")
    print(found[0].cuda_architecture)
