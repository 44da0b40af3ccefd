"""`make gpu-bundle`: gather into `.gpu-bundle/` (git-ignored) what a machine with an
NVIDIA GPU and no network needs for tools/gpu-check.sh, and check that it fits what the
device tool takes along with the tree (64 MiB).

    .venv/bin/python -m bench.gpu_check.make_bundle [--out .gpu-bundle]

It holds:
  wheels/             Skulk's runtime requirements on the llama.cpp path for CPython 3.12,
                      x86-64 Linux (bench/gpu_check/plan.py decides which), Skulk's own
                      wheel with its native core (PyO3's stable ABI from 3.11, so one build
                      serves 3.12), and llama-cpp-python's Python package without its
                      libraries (the device builds them)
  llama.cpp.tar.xz    the llama.cpp sources llama-cpp-python vendors, with tools/patches
                      applied, less what its CUDA build does not read
  stand-in.gguf.xz    the bundled model's skeleton (bench/gpu_check/stand_in.py)
  manifest.json       versions, digests and sizes, read by the check on the device
"""

import argparse
import hashlib
import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import tomllib
import zipfile
from pathlib import Path

from bench.gpu_check import plan
from bench.gpu_check.stand_in import write_skeleton
from bench.llama_server_build import sdist

REPOSITORY = Path(__file__).resolve().parents[2]
DEFAULT_OUT = REPOSITORY / ".gpu-bundle"
LLAMA_CPP_PYTHON = "llama-cpp-python"


def log(message: str) -> None:
    print(f"gpu-bundle: {message}", flush=True)


def pinned(names: list[str]) -> list[str]:
    """Each name at the version installed here (what the tests ran against), or
    unpinned when it is not installed here."""
    specs = []
    for name in names:
        try:
            specs.append(f"{name}=={importlib.metadata.version(name)}")
        except importlib.metadata.PackageNotFoundError:
            specs.append(name)
    return specs


def download_wheels(target: Path) -> list[str]:
    dependencies = tomllib.loads((REPOSITORY / "pyproject.toml").read_text())["project"][
        "dependencies"]
    requirements = pinned(plan.llama_path_requirements(dependencies))
    with tempfile.TemporaryDirectory() as scratch:
        platforms = [arg for p in plan.DEVICE_PLATFORMS for arg in ("--platform", p)]
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--only-binary=:all:",
             "--python-version", plan.DEVICE_PYTHON, "--implementation", "cp",
             *platforms, "--dest", scratch, *requirements], check=True)
        kept = plan.carried(os.listdir(scratch))
        for name in kept:
            shutil.copy2(Path(scratch) / name, target / name)
    return kept


def native_digest() -> str:
    """A digest of what the native core is built from: the check on the device says when
    the carried build is older than the tree's Rust sources."""
    digest = hashlib.sha256()
    files = sorted(p for p in (REPOSITORY / "rust").rglob("*")
                   if p.is_file() and "target" not in p.relative_to(REPOSITORY / "rust").parts)
    for path in [*files, REPOSITORY / "Cargo.toml", REPOSITORY / "Cargo.lock"]:
        if path.exists():
            digest.update(path.relative_to(REPOSITORY).as_posix().encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def build_skulk_wheel(target: Path) -> str:
    """Skulk's wheel, built from a copy of the tree as tests/test_wheel_contents.py does
    (maturin through pip, no downloads), cargo reusing rust/target. The checkout's own
    extension module is left alone."""
    with tempfile.TemporaryDirectory() as scratch:
        tree, out = Path(scratch) / "tree", Path(scratch) / "out"
        tree.mkdir()
        for name in ("pyproject.toml", "README.md", "Cargo.toml", "Cargo.lock"):
            shutil.copy2(REPOSITORY / name, tree / name)
        shutil.copytree(REPOSITORY / "src", tree / "src", ignore=shutil.ignore_patterns(
            "__pycache__", "*.egg-info", "_native*.so"))
        shutil.copytree(REPOSITORY / "rust", tree / "rust",
                        ignore=shutil.ignore_patterns("target"))
        subprocess.run(
            [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps",
             "--no-build-isolation", "--no-index", "--wheel-dir", str(out), str(tree)],
            check=True, env={**os.environ,
                             "CARGO_TARGET_DIR": str(REPOSITORY / "rust" / "target"),
                             "PATH": f"{Path(sys.executable).parent}{os.pathsep}"
                                     f"{os.environ['PATH']}"})
        (wheel,) = out.glob("skulk-*.whl")
        if not plan.suits_device(wheel.name):
            raise SystemExit(f"{wheel.name} would not install on the device's Python")
        shutil.copy2(wheel, target / wheel.name)
        return wheel.name


def patched_sdist(version: str, scratch: Path) -> tuple[Path, str]:
    """llama-cpp-python's sdist unpacked with tools/patches applied (as
    tools/llama-cpp-backends.sh applies them), and the patches' digest."""
    with tarfile.open(sdist(version)) as archive:
        archive.extractall(scratch, filter="data")
    unpacked = scratch / f"llama_cpp_python-{version}"
    patches = sorted((REPOSITORY / "tools" / "patches").glob("*.patch"))
    digest = hashlib.sha256()
    for patch in patches:
        digest.update(hashlib.sha256(patch.read_bytes()).hexdigest().encode())
        subprocess.run(["patch", "--quiet", "--forward", "--strip=1",
                        f"--directory={unpacked}", f"--input={patch}"], check=True)
    return unpacked, digest.hexdigest()[:16]


def pack_sources(unpacked: Path, target: Path) -> int:
    """vendor/llama.cpp as `llama.cpp/...`, less what the build does not read."""
    vendored = unpacked / "vendor" / "llama.cpp"
    count = 0
    with tarfile.open(target, "w:xz", preset=9) as archive:
        for path in sorted(vendored.rglob("*")):
            relative = path.relative_to(vendored).as_posix()
            if path.is_file() and plan.keeps_source(relative):
                archive.add(path, arcname=f"llama.cpp/{relative}", recursive=False)
                count += 1
    return count


def slim_llama_wheel(unpacked: Path, version: str, target: Path) -> str:
    """llama-cpp-python's Python package as a pure wheel, its `lib/` empty: the device's
    CUDA build supplies the libraries (tools/gpu-check.sh copies them in)."""
    name = f"llama_cpp_python-{version}-py3-none-any.whl"
    dist_info = f"llama_cpp_python-{version}.dist-info"
    metadata = (unpacked / "PKG-INFO").read_text()
    records = []
    with zipfile.ZipFile(target / name, "w", zipfile.ZIP_DEFLATED) as wheel:
        def add(arcname: str, data: bytes) -> None:
            wheel.writestr(arcname, data)
            digest = hashlib.sha256(data).digest()
            import base64
            encoded = base64.urlsafe_b64encode(digest).rstrip(b"=").decode()
            records.append(f"{arcname},sha256={encoded},{len(data)}")

        for path in sorted((unpacked / "llama_cpp").rglob("*")):
            if path.is_file() and "lib" not in path.relative_to(unpacked / "llama_cpp").parts:
                add(path.relative_to(unpacked).as_posix(), path.read_bytes())
        add("llama_cpp/lib/.carried-libraries", b"built on the device by tools/gpu-check.sh\n")
        add(f"{dist_info}/METADATA", metadata.encode())
        add(f"{dist_info}/WHEEL", b"Wheel-Version: 1.0\nGenerator: skulk gpu-bundle\n"
                                  b"Root-Is-Purelib: true\nTag: py3-none-any\n")
        records.append(f"{dist_info}/RECORD,,")
        wheel.writestr(f"{dist_info}/RECORD", "\n".join(records) + "\n")
    return name


def tree_bytes() -> int:
    """What the device tool sends besides carried paths: tracked files and untracked ones
    git does not ignore."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others",
                             "--exclude-standard"], cwd=REPOSITORY, check=True,
                            capture_output=True).stdout.decode().split("\0")
    return sum((REPOSITORY / name).stat().st_size for name in set(listed)
               if name and (REPOSITORY / name).is_file())


def folder_bytes(folder: Path) -> int:
    return sum(path.stat().st_size for path in folder.rglob("*") if path.is_file())


def make(out: Path) -> plan.Budget:
    if out.exists():
        shutil.rmtree(out)
    wheels = out / "wheels"
    wheels.mkdir(parents=True)
    version = importlib.metadata.version(LLAMA_CPP_PYTHON)
    log(f"wheels for CPython {plan.DEVICE_PYTHON} (x86-64 Linux)")
    carried = download_wheels(wheels)
    log("Skulk's wheel (maturin, rust/target reused)")
    skulk = build_skulk_wheel(wheels)
    log(f"llama-cpp-python {version}: patched sources and its Python package")
    with tempfile.TemporaryDirectory() as scratch:
        unpacked, patches = patched_sdist(version, Path(scratch))
        sources = pack_sources(unpacked, out / "llama.cpp.tar.xz")
        slim = slim_llama_wheel(unpacked, version, wheels)
    log("the bundled model's skeleton")
    from skulk.testing.models import bundled_gguf

    write_skeleton(bundled_gguf(), out / "stand-in.gguf.xz")
    budget = plan.Budget(tree_bytes=tree_bytes(), bundle_bytes=folder_bytes(out))
    manifest = {
        "python": plan.DEVICE_PYTHON, "llama_cpp_python": version, "patches": patches,
        "native_digest": native_digest(), "skulk_wheel": skulk, "llama_cpp_wheel": slim,
        "wheels": sorted([*carried, skulk, slim]),
        "device_provided": sorted(plan.DEVICE_PROVIDED), "source_files": sources,
        "model_file": bundled_gguf().name,
        "bundle_bytes": budget.bundle_bytes, "tree_bytes": budget.tree_bytes,
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    return budget


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args()
    budget = make(args.out)
    log(budget.describe())
    return 0 if budget.fits else 1


if __name__ == "__main__":
    sys.exit(main())
