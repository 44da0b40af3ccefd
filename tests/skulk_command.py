"""Run the real `skulk` command from this checkout, as a user would type it."""

import os
import subprocess
import sys
from pathlib import Path

import skulk

SOURCE_DIR = Path(skulk.__file__).resolve().parents[1]


def skulk_env(**extra: str) -> dict[str, str]:
    """The environment for a `skulk` subprocess that imports this checkout's code."""
    return {**os.environ, "PYTHONPATH": str(SOURCE_DIR), "PYTHONUNBUFFERED": "1", **extra}


def run_skulk(*args: str, timeout: float = 60.0, stdin: str = "",
              env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "skulk.cli.main", *args], input=stdin,
                          capture_output=True, text=True, timeout=timeout,
                          env=skulk_env(**(env or {})))


def doctor_rows(stdout: str) -> dict[str, str]:
    """`skulk doctor`'s table rows by check name (a row: level, name, detail, fix)."""
    return {line[6:].split("  ")[0].strip(): line for line in stdout.splitlines()
            if line[:4].strip() in ("OK", "WARN", "FAIL")}


def writable(folder: Path) -> bool:
    """Whether a file can be made in `folder` (as root, even a read-only folder takes one)."""
    try:
        (folder / "probe").touch()
    except OSError:
        return False
    (folder / "probe").unlink()
    return True
