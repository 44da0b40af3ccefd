"""What `make gpu-bundle` puts in, decided by bench/gpu_check/plan.py: the requirements
of the llama.cpp path, wheels that install on the device's CPython 3.12, llama.cpp's
sources less what its build does not read, the size budget; and the pieces made from
them (the slim llama-cpp-python wheel, the packed sources, the model's skeleton)."""

import json
import sys
import tarfile
import zipfile
from pathlib import Path

import numpy as np
import pytest

REPOSITORY = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPOSITORY))

from bench.gpu_check import plan  # noqa: E402
from bench.gpu_check.make_bundle import pack_sources, slim_llama_wheel  # noqa: E402
from bench.gpu_check.stand_in import random_blocks, write_model, write_skeleton  # noqa: E402

PYPROJECT_LIKE = [
    "pydantic>=2.7,<3", "uvloop>=0.19; sys_platform != 'win32'",
    "llama-cpp-python==0.3.36", "mlx[cpu]>=0.32; sys_platform == 'linux'",
    "mlx>=0.32; sys_platform == 'darwin'", "mlx-lm>=0.32,<0.33", "eclipse-zenoh>=1.0,<2",
    "pywin32; sys_platform == 'win32'", "Huggingface_Hub>=2.4,<3",
]


def test_the_llama_path_needs_no_mlx_and_builds_llama_cpp_itself() -> None:
    assert plan.llama_path_requirements(PYPROJECT_LIKE) == [
        "diskcache", "eclipse-zenoh", "huggingface-hub", "openai", "pydantic",
        "typing-extensions", "uvloop"]


def test_the_real_requirements_hold_what_a_node_imports() -> None:
    import tomllib

    dependencies = tomllib.loads((REPOSITORY / "pyproject.toml").read_text())["project"][
        "dependencies"]
    names = plan.llama_path_requirements(dependencies)
    for needed in ("fastapi", "uvicorn", "eclipse-zenoh", "llguidance", "gguf", "openai"):
        assert needed in names
    assert not [name for name in names if name.startswith("mlx")]


@pytest.mark.parametrize(("filename", "installs"), [
    ("numpy-2.4.6-cp312-cp312-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl", True),
    ("numpy-2.4.6-cp311-cp311-manylinux_2_27_x86_64.whl", False),
    ("eclipse_zenoh-1.10.2-cp39-abi3-manylinux_2_17_x86_64.manylinux2014_x86_64.whl", True),
    ("skulk-0.1.0-cp311-abi3-linux_x86_64.whl", True),
    ("future-1.0-cp313-abi3-manylinux_2_28_x86_64.whl", False),
    ("pydantic-2.14.4-py3-none-any.whl", True),
    ("old-1.0-py2-none-any.whl", False),
    ("mac-1.0-cp312-cp312-macosx_14_0_arm64.whl", False),
    ("arm-1.0-cp312-cp312-manylinux_2_28_aarch64.whl", False),
    ("musl-1.0-cp312-cp312-musllinux_1_2_x86_64.whl", False),
])
def test_a_wheel_suits_the_device_by_its_tags(filename: str, installs: bool) -> None:
    assert plan.suits_device(filename) is installs


def test_what_travels_leaves_out_what_the_device_has_and_refuses_two_versions() -> None:
    downloaded = ["numpy-2.4.6-cp312-cp312-manylinux_2_28_x86_64.whl",
                  "hf_xet-1.8.0-cp38-abi3-manylinux_2_17_x86_64.whl",
                  "pydantic-2.14.4-py3-none-any.whl",
                  "uvloop-0.23.0-cp312-cp312-manylinux_2_28_x86_64.whl"]
    assert plan.carried(downloaded) == ["pydantic-2.14.4-py3-none-any.whl"]
    with pytest.raises(ValueError, match="two versions of pydantic"):
        plan.carried([*downloaded, "pydantic-2.13.0-py3-none-any.whl"])
    with pytest.raises(ValueError, match="does not install"):
        plan.carried(["zenoh-1.0-cp312-cp312-macosx_14_0_arm64.whl"])
    with pytest.raises(ValueError, match="not a wheel"):
        plan.wheel_name("pydantic-2.14.4.tar.gz")


@pytest.mark.parametrize(("path", "kept"), [
    ("CMakeLists.txt", True), ("src/llama.cpp", True), ("common/common.h", True),
    ("ggml/src/ggml-cuda/fattn.cu", True), ("ggml/src/ggml-rpc/ggml-rpc.cpp", True),
    ("ggml/src/ggml-cpu/ops.cpp", True), ("ggml/src/ggml.c", True),
    ("ggml/src/ggml-vulkan/ggml-vulkan.cpp", False), ("ggml/src/ggml-metal/x.m", False),
    ("tools/server/server.cpp", True), ("tools/mtmd/mtmd.cpp", True),
    ("tools/ui/CMakeLists.txt", True), ("tools/ui/src/app.ts", False),
    ("tools/ui/ui.h.in", True), ("tools/ui/ui.cpp.in", True), ("tools/ui/sources.cmake", True),
    ("tools/ui/package-lock.json", False), ("tools/ui/static/x.in", False),
    ("models/ggml-vocab-llama-bpe.gguf", False), ("docs/build.md", False),
    ("tests/test-backend-ops.cpp", False), ("scripts/ui-assets.cmake", True),
    ("vendor/cpp-httplib/httplib.h", True), ("app/CMakeLists.txt", True), (".git", False),
])
def test_the_sources_keep_what_the_cuda_build_reads(path: str, kept: bool) -> None:
    assert plan.keeps_source(path) is kept


def test_the_budget_counts_the_tree_with_the_bundle_and_keeps_room() -> None:
    fits = plan.Budget(tree_bytes=6 * plan.MIB, bundle_bytes=40 * plan.MIB)
    assert fits.fits and fits.total_bytes == 46 * plan.MIB
    assert "46.0 MiB of 64 MiB" in fits.describe() and fits.describe().endswith("fits")
    tight = plan.Budget(tree_bytes=6 * plan.MIB, bundle_bytes=55 * plan.MIB)
    assert not tight.fits, "61 MiB leaves less than the 4 MiB kept free"
    assert tight.describe().endswith("does NOT fit")


def test_the_slim_llama_wheel_carries_the_python_package_without_libraries(
        tmp_path: Path) -> None:
    unpacked = tmp_path / "llama_cpp_python-0.3.36"
    (unpacked / "llama_cpp" / "lib").mkdir(parents=True)
    (unpacked / "llama_cpp" / "__init__.py").write_text("__version__ = '0.3.36'\n")
    (unpacked / "llama_cpp" / "server").mkdir()
    (unpacked / "llama_cpp" / "server" / "app.py").write_text("\n")
    (unpacked / "llama_cpp" / "lib" / "libllama.so").write_bytes(b"\x7fELF")
    (unpacked / "PKG-INFO").write_text("Metadata-Version: 2.1\nName: llama_cpp_python\n"
                                       "Version: 0.3.36\n")
    name = slim_llama_wheel(unpacked, "0.3.36", tmp_path)
    assert name == "llama_cpp_python-0.3.36-py3-none-any.whl" and plan.suits_device(name)
    with zipfile.ZipFile(tmp_path / name) as wheel:
        names = set(wheel.namelist())
        record = wheel.read("llama_cpp_python-0.3.36.dist-info/RECORD").decode()
    assert {"llama_cpp/__init__.py", "llama_cpp/server/app.py",
            "llama_cpp_python-0.3.36.dist-info/METADATA"} <= names
    assert "llama_cpp/lib/libllama.so" not in names
    recorded = {line.split(",")[0] for line in record.splitlines()}
    assert recorded == names, "RECORD lists every file, pip refuses a wheel otherwise"


def test_the_packed_sources_leave_out_what_the_build_does_not_read(tmp_path: Path) -> None:
    vendored = tmp_path / "sdist" / "vendor" / "llama.cpp"
    for path in ("CMakeLists.txt", "ggml/src/ggml-cuda/mmq.cu", "docs/x.md",
                 "ggml/src/ggml-sycl/y.cpp", "tools/ui/CMakeLists.txt", "tools/ui/big.js"):
        (vendored / path).parent.mkdir(parents=True, exist_ok=True)
        (vendored / path).write_text(path)
    assert pack_sources(tmp_path / "sdist", tmp_path / "sources.tar.xz") == 3
    with tarfile.open(tmp_path / "sources.tar.xz") as archive:
        assert sorted(archive.getnames()) == [
            "llama.cpp/CMakeLists.txt", "llama.cpp/ggml/src/ggml-cuda/mmq.cu",
            "llama.cpp/tools/ui/CMakeLists.txt"]


@pytest.mark.parametrize(("type_name", "values"), [("F32", 576), ("Q8_0", 64 * 32),
                                                   ("Q4_1", 48 * 32)])
def test_random_weights_take_each_types_block_layout(type_name: str, values: int) -> None:
    import gguf

    block, size = gguf.GGML_QUANT_SIZES[gguf.GGMLQuantizationType[type_name]]
    data = random_blocks(type_name, values, np.random.default_rng(0))
    assert data.dtype == np.uint8 and data.size == values // block * size


def test_the_stand_in_has_the_real_files_metadata_and_tensors(tmp_path: Path) -> None:
    import gguf

    real = tmp_path / "real.gguf"
    writer = gguf.GGUFWriter(str(real), "llama")
    writer.add_block_count(1)
    writer.add_array("tokenizer.ggml.tokens", ["<s>", "a", "b"])
    writer.add_string("tokenizer.chat_template", "{{ messages }}")
    rng = np.random.default_rng(1)
    writer.add_tensor("blk.0.attn_norm.weight", np.ones(64, dtype=np.float32))
    quantized = gguf.quants.quantize(rng.standard_normal((4, 64)).astype(np.float32),
                                     gguf.GGMLQuantizationType.Q8_0)
    writer.add_tensor("token_embd.weight", quantized, raw_shape=quantized.shape,
                      raw_dtype=gguf.GGMLQuantizationType.Q8_0)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    write_skeleton(real, tmp_path / "skeleton.gguf.xz")
    write_model(tmp_path / "skeleton.gguf.xz", tmp_path / "stand-in.gguf")
    before, after = gguf.GGUFReader(str(real)), gguf.GGUFReader(str(tmp_path / "stand-in.gguf"))
    assert [(t.name, list(t.shape), t.tensor_type) for t in after.tensors] == [
        (t.name, list(t.shape), t.tensor_type) for t in before.tensors]
    assert (tmp_path / "stand-in.gguf").stat().st_size == real.stat().st_size
    for key in ("tokenizer.ggml.tokens", "tokenizer.chat_template", "llama.block_count"):
        assert json.dumps(after.fields[key].contents()) == json.dumps(
            before.fields[key].contents())
