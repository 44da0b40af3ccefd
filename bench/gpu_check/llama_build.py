"""Build llama.cpp once, from the bundle's patched sources, into both what llama-cpp-python
loads (libllama, libggml and its backends, libmtmd) and `llama-server`; then put the
libraries where the installed llama-cpp-python looks for them.

    python -m bench.gpu_check.llama_build SOURCES.tar.xz BUILD_DIR [--cuda-arch 90] [--jobs 16]
    python -m bench.gpu_check.llama_build --install BUILD_DIR LIB_DIR

Standard library only: it runs before anything else is installed on the device.
"""

import argparse
import os
import shutil
import subprocess
import sys
import tarfile
import time
from pathlib import Path

# The targets llama-cpp-python's own build installs (its CMakeLists.txt) and the server.
TARGETS = ("llama", "ggml", "mtmd", "llama-server")
# What a CUDA build's ggml-cuda library is called; its absence means a CPU build.
CUDA_LIBRARY = "libggml-cuda.so"


def configure_command(source: Path, build: Path, cuda_arch: str | None) -> list[str]:
    """CMake's configure line: shared libraries with ggml RPC, CUDA for `cuda_arch` alone
    (None: a CPU build), the server without its web UI (nothing to download it from), no
    tests or examples, and libraries that find each other beside themselves ($ORIGIN) so
    they can be copied into llama-cpp-python's package."""
    flags = [
        "cmake", "-S", str(source), "-B", str(build), "-DCMAKE_BUILD_TYPE=Release",
        "-DBUILD_SHARED_LIBS=ON", "-DGGML_RPC=ON", "-DGGML_NATIVE=ON", "-DLLAMA_CURL=OFF",
        "-DLLAMA_BUILD_TESTS=OFF", "-DLLAMA_BUILD_EXAMPLES=OFF", "-DLLAMA_BUILD_TOOLS=ON",
        "-DLLAMA_BUILD_SERVER=ON", "-DLLAMA_BUILD_APP=OFF", "-DLLAMA_BUILD_UI=OFF",
        "-DLLAMA_USE_PREBUILT_UI=OFF",
        "-DCMAKE_BUILD_WITH_INSTALL_RPATH=ON", "-DCMAKE_INSTALL_RPATH=$ORIGIN",
        # ...and find the CUDA toolkit's libraries (cudart, cuBLAS) where they were linked.
        "-DCMAKE_INSTALL_RPATH_USE_LINK_PATH=ON",
    ]
    if shutil.which("ninja"):
        flags += ["-G", "Ninja"]
    if cuda_arch is not None:
        flags += ["-DGGML_CUDA=ON", f"-DCMAKE_CUDA_ARCHITECTURES={cuda_arch}"]
    return flags


def build_command(build: Path, jobs: int) -> list[str]:
    return ["cmake", "--build", str(build), "--target", *TARGETS, "-j", str(jobs)]


def library_files(bin_dir: Path) -> list[Path]:
    """The shared libraries a build left in its `bin` (with their version-named links)."""
    return sorted(path for path in bin_dir.iterdir() if ".so" in path.name)


def install_libraries(build: Path, lib_dir: Path) -> list[str]:
    """Copy the build's libraries into llama-cpp-python's `lib`, links kept as links."""
    lib_dir.mkdir(parents=True, exist_ok=True)
    names = []
    for path in library_files(build / "bin"):
        target = lib_dir / path.name
        if target.is_symlink() or target.exists():
            target.unlink()
        if path.is_symlink():
            target.symlink_to(os.readlink(path))
        else:
            shutil.copy2(path, target)
        names.append(path.name)
    return names


def unpack(sources: Path, into: Path) -> Path:
    """The tarball's `llama.cpp/` under `into`, unpacked once."""
    source = into / "llama.cpp"
    if not (source / "CMakeLists.txt").exists():
        into.mkdir(parents=True, exist_ok=True)
        with tarfile.open(sources) as archive:
            archive.extractall(into, filter="data")
    return source


def build(sources: Path, build_dir: Path, cuda_arch: str | None, jobs: int) -> Path:
    source = unpack(sources, build_dir)
    out = build_dir / ("cuda" if cuda_arch else "cpu")
    started = time.monotonic()
    subprocess.run(configure_command(source, out, cuda_arch), check=True,
                   stdout=subprocess.DEVNULL)
    subprocess.run(build_command(out, jobs), check=True)
    print(f"llama_build: built {', '.join(TARGETS)} in {time.monotonic() - started:.0f} s "
          f"into {out}", flush=True)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--install", action="store_true",
                        help="copy BUILD's libraries into LIB_DIR instead of building")
    parser.add_argument("first", type=Path, help="SOURCES.tar.xz, or BUILD with --install")
    parser.add_argument("second", type=Path, help="BUILD_DIR, or LIB_DIR with --install")
    parser.add_argument("--cuda-arch", default=None, help="e.g. 90; none: a CPU build")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    args = parser.parse_args()
    if args.install:
        print("\n".join(install_libraries(args.first, args.second)))
    else:
        print(build(args.first, args.second, args.cuda_arch, args.jobs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
