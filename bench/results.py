"""Benchmark results as JSON under bench/results/, one file per run, for the website's charts.

Every file is `{"benchmark", "date", "machine", "commit", "source", "results"}`: what ran,
when (UTC, ISO 8601), on what (CPU, cores, memory, OS, load average), from which commit,
and how the figures were obtained. `results` is the benchmark's own payload; the site's
chart for a benchmark reads the newest file of that name (website/skulk_site/charts.py).
"""

import json
import os
import platform
import subprocess
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

RESULTS_DIR = Path(__file__).resolve().parent / "results"
REPOSITORY = Path(__file__).resolve().parents[1]


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _memory_gib() -> float:
    import psutil

    return round(psutil.virtual_memory().total / 1024**3, 1)


def machine_description() -> dict[str, Any]:
    """What the figures were measured on, as a reader comparing them needs to know."""
    cores = os.cpu_count() or 0
    memory = _memory_gib()
    return {
        "summary": f"{cores}-core {_cpu_model()} ({platform.system()} {platform.machine()}), "
                   f"{memory:g} GiB",
        "cpu": _cpu_model(), "cores": cores, "memory_gib": memory,
        "os": platform.platform(), "python": platform.python_version(),
        "load_average": [round(value, 2) for value in os.getloadavg()],
    }


def current_commit() -> str:
    """The checkout's commit, `+dirty` when it has uncommitted changes; `unknown` outside git."""
    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(REPOSITORY), *args], capture_output=True,
                              text=True, check=True, timeout=10).stdout.strip()
    try:
        commit = git("rev-parse", "HEAD")
        return commit + ("+dirty" if git("status", "--porcelain", "--untracked-files=no")
                         else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def result_document(name: str, payload: dict[str, Any], source: str,
                    now: datetime | None = None) -> dict[str, Any]:
    """The JSON a run writes: the payload stamped with date, machine and commit."""
    moment = (now or datetime.now(UTC)).replace(microsecond=0)
    return {"benchmark": name, "date": moment.isoformat(), "machine": machine_description(),
            "commit": current_commit(), "source": source, "results": payload}


def write_result(name: str, payload: dict[str, Any], source: str = "",
                 directory: Path = RESULTS_DIR) -> Path:
    """Write one run's results as `<name>-<UTC time>.json`; returns the file's path."""
    document = result_document(name, payload, source or f"bench/{name}.py, one run")
    directory.mkdir(parents=True, exist_ok=True)
    stamp = document["date"].replace(":", "").replace("+0000", "Z")
    path = directory / f"{name}-{stamp}.json"
    path.write_text(json.dumps(document, indent=2) + "\n")
    print(f"results written to {path}")
    return path
