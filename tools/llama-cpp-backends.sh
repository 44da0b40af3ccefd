#!/usr/bin/env bash
# Make sure the venv's llama-cpp-python carries ggml RPC (a llama.cpp instance split across
# nodes) and the GPU backend this machine has: CUDA when nvcc and an NVIDIA driver are
# there, Metal on macOS (llama.cpp's default there), Vulkan when its SDK is present; CPU
# otherwise.
#
# pip's wheel cache keys a wheel built from source by the source alone, not by CMAKE_ARGS:
# a wheel cached before these flags were asked for would be reinstalled as it is. So when
# the installed build lacks a backend, it is built again into a cache keyed by the flags
# (about 5 minutes on 2 cores, once per machine) and installed from there.
set -euo pipefail
# Usage: llama-cpp-backends.sh PYTHON   (check the venv of PYTHON, rebuild if needed)
#        llama-cpp-backends.sh --flags  (print the CMake flags for this machine)

# SKULK_LLAMA_GPU=cuda|metal|vulkan|cpu overrides the choice. CUDA needs both the toolkit
# and an NVIDIA driver: compiling its kernels takes long, and without a GPU they never run.
gpu="${SKULK_LLAMA_GPU:-}"
if [ -z "$gpu" ]; then
    if command -v nvcc >/dev/null 2>&1 && { [ -e /proc/driver/nvidia/version ] \
            || nvidia-smi -L >/dev/null 2>&1; }; then
        gpu=cuda
    elif [ "$(uname -s)" = Darwin ]; then
        gpu=metal
    elif [ -n "${VULKAN_SDK:-}" ] || command -v glslc >/dev/null 2>&1; then
        gpu=vulkan
    else
        gpu=cpu
    fi
fi
flags="-DGGML_RPC=on"
wanted="ggml-rpc"
case "$gpu" in
    cuda) flags="$flags -DGGML_CUDA=on"; wanted="$wanted ggml-cuda" ;;
    metal) wanted="$wanted ggml-metal" ;;  # on by default on macOS
    vulkan) flags="$flags -DGGML_VULKAN=on"; wanted="$wanted ggml-vulkan" ;;
    cpu) ;;
    *) echo "SKULK_LLAMA_GPU=$gpu: expected cuda, metal, vulkan or cpu" >&2; exit 2 ;;
esac
if [ "$1" = "--flags" ]; then echo "$flags"; exit 0; fi
python="$1"

lib_dir=$("$python" -c 'import importlib.util, pathlib
spec = importlib.util.find_spec("llama_cpp")
print(pathlib.Path(spec.origin).parent / "lib")')
missing=""
for name in $wanted; do
    compgen -G "$lib_dir/lib$name.*" >/dev/null || missing="$missing $name"
done
[ -z "$missing" ] && exit 0

version=$("$python" -c 'import importlib.metadata; print(importlib.metadata.version("llama-cpp-python"))')
key=$(echo "$version $flags" | sha256sum | cut -c1-16)
wheels="${XDG_CACHE_HOME:-$HOME/.cache}/skulk/llama-cpp-python/$key"
if ! compgen -G "$wheels/*.whl" >/dev/null; then
    echo "llama-cpp-python $version lacks$missing: building it with $flags (about 5 minutes)"
    CMAKE_ARGS="$flags" "$python" -m pip wheel --quiet --no-deps --no-cache-dir \
        --wheel-dir "$wheels" "llama-cpp-python==$version"
fi
"$python" -m pip install --quiet --no-deps --force-reinstall "$wheels"/*.whl
