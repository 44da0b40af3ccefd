"""What this Skulk is built from: its version, the git commit of a checkout, and the
engines' versions, read from package metadata without importing the engines
(`skulk --version`, `GET /version`)."""

import subprocess
import sys
from collections.abc import Mapping
from importlib import metadata
from pathlib import Path

from pydantic import BaseModel, Field

import skulk

# src/skulk/__init__.py -> the checkout's root, when skulk runs from one.
_CHECKOUT = Path(skulk.__file__).resolve().parents[2]


class Versions(BaseModel):
    """The versions a bug report needs."""

    skulk: str = Field(description="Skulk's package version.")
    git_commit: str | None = Field(
        default=None, description="The checkout's commit (short hash, `+dirty` when it has "
        "uncommitted changes), when Skulk runs from a git checkout.")
    python: str = Field(description="The Python running Skulk.")
    llama_cpp_python: str | None = Field(
        default=None, description="llama-cpp-python's version, if installed.")
    ggml: str | None = Field(
        default=None, description="The ggml library llama-cpp-python was built with.")
    mlx: str | None = Field(default=None, description="MLX's version, if installed.")
    mlx_lm: str | None = Field(default=None, description="mlx-lm's version, if installed.")


def installed_version(package: str) -> str | None:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def git_commit(checkout: Path = _CHECKOUT) -> str | None:
    """The short commit of `checkout` (with `+dirty`), or None outside a git checkout."""
    if not (checkout / ".git").exists():
        return None
    try:
        commit = subprocess.run(["git", "-C", str(checkout), "rev-parse", "--short", "HEAD"],
                                capture_output=True, text=True, timeout=5)
        dirty = subprocess.run(["git", "-C", str(checkout), "status", "--porcelain",
                                "--untracked-files=no"],
                               capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if commit.returncode != 0:
        return None
    return commit.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")


def versions(native: Mapping[str, str | None] | None = None) -> Versions:
    """This process's versions; `native` is what the engines' descriptions found of the
    native libraries they carry (`ggml`; the caller asks them, so this module stays below
    the worker)."""
    ggml = (native or {}).get("ggml")
    return Versions(skulk=skulk.__version__, git_commit=git_commit(),
                    python=sys.version.split()[0],
                    llama_cpp_python=installed_version("llama_cpp_python"),
                    ggml=ggml, mlx=installed_version("mlx"),
                    mlx_lm=installed_version("mlx-lm"))


def version_text(found: Versions) -> str:
    """`skulk --version`'s lines."""
    commit = f" (git {found.git_commit})" if found.git_commit else ""
    llama = (f"llama-cpp-python {found.llama_cpp_python}"
             + (f" (ggml {found.ggml})" if found.ggml else "")
             if found.llama_cpp_python else "llama-cpp-python not installed")
    mlx = (f"MLX {found.mlx}" + (f", mlx-lm {found.mlx_lm}" if found.mlx_lm else "")
           if found.mlx else "MLX not installed")
    return f"skulk {found.skulk}{commit}\nPython {found.python}\n{llama}\n{mlx}"
