"""`skulk doctor`'s check of Skulk's native core (skulk._native, built from rust/ by
maturin) and of the Rust toolchain a checkout builds it with."""

import importlib
import shutil
import subprocess

from skulk.worker.engines.machine_check import MachineCheck as Check

FIX = ("install Rust with rustup (https://rustup.rs) or your system's cargo package, then "
       "run `make install`")


def native_core(search_path: str | None = None) -> list[Check]:
    """The native core (the ggml RPC secure channel) imports, and cargo is on `search_path`
    (default: PATH)."""
    try:
        importlib.import_module("skulk._native")
        checks = [Check("native core", "OK", "skulk._native imports")]
    except ImportError as error:
        checks = [Check("native core", "FAIL", f"skulk._native is not built ({error})", FIX)]
    cargo = shutil.which("cargo", path=search_path)
    if cargo is None:
        return [*checks, Check("Rust", "WARN", "no cargo on PATH: a checkout cannot build "
                               "the native core", FIX)]
    try:
        version = subprocess.run([cargo, "--version"], capture_output=True, text=True,
                                 timeout=10, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError) as error:
        return [*checks, Check("Rust", "WARN", f"{cargo} does not run ({error})", FIX)]
    return [*checks, Check("Rust", "OK", version)]
