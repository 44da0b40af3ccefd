"""Build llama.cpp's own `llama-server` from the sources vendored in the installed
llama-cpp-python's sdist (the same llama.cpp Skulk runs), cached under bench/.cache.

    .venv/bin/python bench/llama_server_build.py     # prints the binary's path

The sdist comes from the package registry (`pip download`); the build uses the CPU flags
llama-cpp-python's own build used, so the comparison is engine against engine.
"""

import importlib.metadata
import os
import subprocess
import sys
import tarfile
from pathlib import Path

CACHE = Path(__file__).resolve().parent / ".cache"


def installed_version() -> str:
    return importlib.metadata.version("llama_cpp_python")


def sdist(version: str) -> Path:
    found = sorted(CACHE.glob(f"llama_cpp_python-{version}.tar.gz"))
    if found:
        return found[0]
    CACHE.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
                    "--no-binary", ":all:", f"llama-cpp-python=={version}", "-d", str(CACHE)],
                   check=True)
    return next(CACHE.glob(f"llama_cpp_python-{version}.tar.gz"))


def llama_server(version: str | None = None) -> Path:
    """The built binary, building it (about 5 minutes on 2 cores) the first time."""
    version = version or installed_version()
    source = CACHE / f"llama_cpp_python-{version}"
    binary = source / "build-server" / "bin" / "llama-server"
    if binary.exists():
        return binary
    if not source.exists():
        with tarfile.open(sdist(version)) as archive:
            archive.extractall(CACHE, filter="data")
    vendored = source / "vendor" / "llama.cpp"
    build = source / "build-server"
    subprocess.run(["cmake", "-S", str(vendored), "-B", str(build),
                    "-DCMAKE_BUILD_TYPE=Release", "-DLLAMA_CURL=OFF", "-DGGML_NATIVE=ON",
                    "-DLLAMA_BUILD_TESTS=OFF", "-DLLAMA_BUILD_EXAMPLES=OFF"], check=True,
                   stdout=subprocess.DEVNULL)
    jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL", "2")
    subprocess.run(["cmake", "--build", str(build), "--target", "llama-server", "-j", jobs],
                   check=True, stdout=subprocess.DEVNULL)
    return binary


if __name__ == "__main__":
    print(llama_server())
