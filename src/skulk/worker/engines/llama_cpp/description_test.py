"""llama.cpp's backend tag: a GPU backend is claimed only when the build carries it and
the node has such a GPU."""

from pathlib import Path
from typing import get_args

import pytest

from skulk.shared.types.telemetry import GpuBackend, GpuDevice
from skulk.worker.engines.llama_cpp.description import (
    GPU_BACKENDS,
    LlamaCppOptions,
    backend_tag,
    built_ggml_version,
    gpu_backends_in,
)
from skulk.worker.engines.options import EngineOptionError


def gpu(backend: GpuBackend) -> GpuDevice:
    return GpuDevice(name="g", backend=backend, vram_total_bytes=8, vram_free_bytes=8)


def test_every_gpu_backend_is_ranked() -> None:
    assert set(GPU_BACKENDS) == set(get_args(GpuBackend))


def test_the_libraries_in_the_wheel_say_which_backends_are_built(tmp_path: Path) -> None:
    lib = tmp_path / "lib"
    lib.mkdir()
    for name in ("libggml-base.so", "libggml-cpu.so", "libggml-cuda.so", "libllama.so",
                 "libggml-metal.dylib", "libggml-vulkan-shaders.txt"):
        (lib / name).write_text("")
    assert gpu_backends_in([lib, tmp_path / "missing"]) == {"cuda", "metal"}
    assert gpu_backends_in([tmp_path / "missing"]) == set()


@pytest.mark.parametrize(("built", "gpus", "tag"), [
    (set(), [], "llama_cpp-cpu"),
    ({"cuda"}, [], "llama_cpp-cpu"),  # a CUDA build on a node without an NVIDIA GPU
    (set(), [gpu("cuda")], "llama_cpp-cpu"),  # a CPU build on a GPU node
    ({"cuda"}, [gpu("cuda")], "llama_cpp-cuda"),
    ({"vulkan"}, [gpu("cuda"), gpu("vulkan")], "llama_cpp-vulkan"),
    ({"cuda", "vulkan"}, [gpu("vulkan"), gpu("cuda")], "llama_cpp-cuda"),
    ({"metal"}, [gpu("metal")], "llama_cpp-metal"),
])
def test_the_tag_names_the_best_backend_built_and_present(
        built: set[GpuBackend], gpus: list[GpuDevice], tag: str) -> None:
    assert backend_tag(built, gpus) == tag


def test_gpu_layers_is_a_count() -> None:
    assert LlamaCppOptions.parse({}).gpu_layers == 0
    assert LlamaCppOptions.parse({"gpu_layers": "33"}).gpu_layers == 33
    with pytest.raises(EngineOptionError, match="gpu_layers"):
        LlamaCppOptions.parse({"gpu_layers": "-1"})


def test_ggml_version_comes_from_the_library_file_name(tmp_path: Path) -> None:
    (tmp_path / "libggml.so.0.25.3").touch()
    (tmp_path / "libggml-cpu.so.0.25.3").touch()
    assert built_ggml_version([tmp_path]) == "0.25.3"
    assert built_ggml_version([tmp_path / "missing"]) is None
