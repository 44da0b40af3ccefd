#!/usr/bin/env bash
# Make sure the venv's llama-cpp-python carries ggml RPC (a llama.cpp instance split across
# nodes) and the GPU backend this machine has: CUDA when nvcc and an NVIDIA driver are
# there, Metal on macOS (llama.cpp's default there), Vulkan when its SDK is present; CPU
# otherwise.
#
# pip's wheel cache keys a wheel built from source by the source alone, not by CMAKE_ARGS:
# a wheel cached before these flags were asked for would be reinstalled as it is. So when
# the installed build lacks a backend, it is built again into a cache keyed by the flags
# (about 5 minutes on 2 cores, once per machine) and installed from there. The same when
# Skulk's patches to llama.cpp (tools/patches) are not in it: they are part of the key.
set -euo pipefail
# Usage: llama-cpp-backends.sh PYTHON   (check the venv of PYTHON, rebuild if needed; when
#                                        llama-cpp-python is not installed yet, install the
#                                        version pyproject.toml pins, built this way, so
#                                        that pip does not build a stock one first)
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

# Skulk's changes to the vendored llama.cpp (tools/patches/*.patch, applied in name order
# to the unpacked sdist before it is built; each file says what it changes and why). An
# installed build records their digest in its lib folder; one without it is rebuilt.
patches=$(find "$(dirname "$0")/patches" -name '*.patch' 2>/dev/null | sort)
patch_digest=$(for p in $patches; do sha256sum <"$p"; done | sha256sum | cut -c1-16)

lib_dir=$("$python" -c 'import importlib.util, pathlib
spec = importlib.util.find_spec("llama_cpp")
print("" if spec is None else pathlib.Path(spec.origin).parent / "lib")')
if [ -z "$lib_dir" ]; then
    missing=""  # nothing installed yet: install the pinned version, built here
    version=$(sed -n 's/^ *"llama-cpp-python==\([^"]*\)",*$/\1/p' "$(dirname "$0")/../pyproject.toml")
    [ -n "$version" ] || { echo "pyproject.toml pins no llama-cpp-python version" >&2; exit 1; }
else
    missing=""
    for name in $wanted; do
        compgen -G "$lib_dir/lib$name.*" >/dev/null || missing="$missing $name"
    done
    [ "$(cat "$lib_dir/skulk-patches" 2>/dev/null)" = "$patch_digest" ] || missing="$missing skulk-patches"
    [ -z "$missing" ] && exit 0
    version=$("$python" -c 'import importlib.metadata; print(importlib.metadata.version("llama-cpp-python"))')
fi
key=$(echo "$version $flags $patch_digest" | sha256sum | cut -c1-16)
wheels="${XDG_CACHE_HOME:-$HOME/.cache}/skulk/llama-cpp-python/$key"
if ! compgen -G "$wheels/*.whl" >/dev/null; then
    echo "llama-cpp-python $version${missing:+ lacks$missing}: building it with $flags (about 5 minutes)"
    source_dir=$(mktemp -d)
    trap 'rm -rf "$source_dir"' EXIT
    "$python" -m pip download --quiet --no-deps --no-binary :all: --dest "$source_dir" \
        "llama-cpp-python==$version"
    tar -xzf "$source_dir"/*.tar.gz -C "$source_dir"
    unpacked=$(find "$source_dir" -mindepth 1 -maxdepth 1 -type d)
    for p in $patches; do
        command -v patch >/dev/null || { echo "applying $p needs 'patch' (apt-get install patch)" >&2; exit 1; }
        # A patch written for another version is left out, loudly, rather than failing the
        # install: llama.cpp works without it, only less well.
        if patch --quiet --forward --dry-run --strip=1 --directory="$unpacked" <"$p" >/dev/null; then
            patch --quiet --forward --strip=1 --directory="$unpacked" <"$p"
        else
            echo "warning: $p does not apply to llama-cpp-python $version: building without it" >&2
        fi
    done
    CMAKE_ARGS="$flags" "$python" -m pip wheel --quiet --no-deps --no-cache-dir \
        --wheel-dir "$wheels" "$unpacked"
fi
"$python" -m pip install --quiet --no-deps --force-reinstall "$wheels"/*.whl
lib_dir=$("$python" -c 'import importlib.util, pathlib
print(pathlib.Path(importlib.util.find_spec("llama_cpp").origin).parent / "lib")')
echo "$patch_digest" >"$lib_dir/skulk-patches"
