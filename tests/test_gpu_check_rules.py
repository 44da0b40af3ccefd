"""The GPU check's pure parts: nvidia-smi's answers parsed, each check's pass/fail rule,
the result JSON, the comparison's command line, and llama.cpp's build lines."""

import argparse
import json
import os
import sys
from pathlib import Path

import pytest

REPOSITORY = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPOSITORY))

from bench.gpu_check import llama_build, nvidia, verdicts  # noqa: E402
from bench.gpu_check.run import bench_command  # noqa: E402
from bench.gpu_check.verdicts import MIB, Check, Step  # noqa: E402

# As an H200 answers `--query-gpu=name,compute_cap,memory.total,memory.used`.
H200 = "NVIDIA H200, 9.0, 143771, 4\n"
H200_GPU = nvidia.NvidiaGpu("NVIDIA H200", "9.0", 143771 * MIB, 4 * MIB)


def test_nvidia_smi_gpus_parse_with_their_architecture() -> None:
    assert nvidia.parse_gpus(H200) == [H200_GPU]
    assert H200_GPU.cuda_architecture == "90"
    two = nvidia.parse_gpus("NVIDIA RTX 6000 Ada, Generation, 8.9, 49140, 100\n"
                            "NVIDIA A100, [N/A], 40960, 0\n\ngarbage\n")
    assert [(g.name, g.cuda_architecture) for g in two] == [
        ("NVIDIA RTX 6000 Ada, Generation", "89")]
    with pytest.raises(ValueError):
        nvidia.cuda_architecture("[N/A]")


def test_nvidia_smi_apps_sum_by_process() -> None:
    assert nvidia.parse_apps("1234, 700\n1234, 100\n99, [N/A]\n") == {1234: 800 * MIB}
    assert nvidia.apps(lambda argv: None) == {}
    assert nvidia.gpus(lambda argv: H200 if "--query-gpu" in argv[1] else None) == [H200_GPU]


def reported(name: str = "NVIDIA H200", total_mib: int = 143771) -> dict[str, object]:
    return {"name": name, "backend": "cuda", "vram_total_bytes": total_mib * MIB,
            "vram_free_bytes": 1}


def test_telemetry_must_name_what_nvidia_smi_lists() -> None:
    assert verdicts.telemetry("cuda", [reported()], [H200_GPU]).passed is True
    assert verdicts.telemetry("cuda", [reported(total_mib=80000)], [H200_GPU]).passed is False
    assert verdicts.telemetry("cuda", [], [H200_GPU]).passed is False
    assert verdicts.telemetry("cuda", [reported()], []).passed is False
    assert verdicts.telemetry("cpu", [], []).passed is True
    assert verdicts.telemetry("cpu", [reported()], []).passed is False
    vulkan_only = [{**reported(), "backend": "vulkan"}]
    assert verdicts.telemetry("cpu", vulkan_only, []).passed is True


def candidate(gpu_layers: int, fits: bool = True, vram_mib: int = 120) -> dict[str, object]:
    return {"fits": fits, "nodes": [{"gpu_layers": gpu_layers,
                                     "vram_needed_bytes": vram_mib * MIB}]}


def test_every_layer_must_go_to_the_gpu_and_none_on_a_cpu_run() -> None:
    check = verdicts.every_layer_on_gpu("cuda", candidate(30), 30)
    assert check.passed is True and check.figures["vram_admitted_mib"] == 120
    assert verdicts.every_layer_on_gpu("cuda", candidate(29), 30).passed is False
    assert verdicts.every_layer_on_gpu("cuda", candidate(30, fits=False), 30).passed is False
    assert verdicts.every_layer_on_gpu("cuda", None, 30).passed is False
    assert verdicts.every_layer_on_gpu("cpu", candidate(0), 30).passed is True
    assert verdicts.every_layer_on_gpu("cpu", candidate(30), 30).passed is False


def test_the_admission_may_not_undercount_beyond_a_cuda_context() -> None:
    admitted = 200 * MIB
    fine = verdicts.vram_admission("cuda", admitted, 4 * MIB, 4 * MIB + 700 * MIB)
    assert fine.passed is True and fine.figures["measured_over_admitted"] == 3.5
    beyond = admitted + verdicts.CUDA_CONTEXT_ALLOWANCE_BYTES + MIB
    assert verdicts.vram_admission("cuda", admitted, 0, beyond).passed is False
    assert verdicts.vram_admission("cuda", admitted, 10 * MIB, 10 * MIB).passed is False
    assert verdicts.vram_admission("cpu", admitted, 0, 0).passed is None


def test_answers_embeddings_and_the_json_schema() -> None:
    assert verdicts.answered("chat", "hello", 3).passed is True
    assert verdicts.answered("chat", "", 0).passed is False
    assert verdicts.embedding([0.1] * 576, 576).passed is True
    assert verdicts.embedding([0.0] * 576, 576).passed is False
    assert verdicts.embedding([float("nan")] * 576, 576).passed is False
    assert verdicts.embedding([0.1] * 10, 576).passed is False
    assert verdicts.json_answer('{"answer": "yes"}', ("yes", "no")).passed is True
    assert verdicts.json_answer('{"answer": "maybe"}', ("yes", "no")).passed is False
    assert verdicts.json_answer('{"answer": "yes", "x": 1}', ("yes", "no")).passed is False
    assert verdicts.json_answer('{"answer": "ye', ("yes", "no")).passed is False


def test_the_split_needs_two_nodes_and_on_a_gpu_a_device_server_holding_memory() -> None:
    ranks = [{"node_id": "a"}, {"node_id": "b"}]
    assert verdicts.split_on_two_nodes("cuda", ranks, 300 * MIB).passed is True
    assert verdicts.split_on_two_nodes("cuda", ranks, 0).passed is False
    assert verdicts.split_on_two_nodes("cuda", ranks, None).passed is False
    assert verdicts.split_on_two_nodes("cpu", ranks, None).passed is True
    assert verdicts.split_on_two_nodes("cpu", [{"node_id": "a"}] * 2, None).passed is False


def test_targets_are_judged_row_by_row() -> None:
    met = verdicts.targets({"decode_tps": 0.97, "aggregate_64_tps": 0.9, "ttft_ms": 1.05}, 64)
    assert [met[k]["met"] for k in ("decode_tps", "aggregate_64_tps", "ttft_ms")] == [
        True, False, True]
    assert verdicts.targets({}, 64)["decode_tps"]["met"] is None


def test_the_serving_paths_share_of_each_tokens_time() -> None:
    skulk = {"decode_tps": 500.0, "cpu_ms_per_token_node_alone": 0.5,
             "aggregate_64_tps": 4000.0, "cpu_ms_per_token_node_64_streams": 0.2}
    # alone: 0.5 ms of a 2 ms token; at 64 streams: 0.2 ms of a 0.25 ms token
    assert verdicts.serving_share(skulk, 64) == {"alone": 0.25, "64_streams": 0.8}
    assert verdicts.serving_share({}, 64) == {"alone": None, "64_streams": None}


def test_the_result_passes_only_when_every_check_that_ran_passed() -> None:
    good = Step("whole", 40, 12.0, [Check("a", True, ""), Check("b", None, "skipped")])
    slow = Step("bench", 120, 130.0, [Check("c", True, "")])
    result = verdicts.summary("cuda", False, [good, slow], H200_GPU, {"model": "m"})
    assert result["passed"] is True and result["over_budget"] == ["bench"]
    assert result["gpu"] == {"name": "NVIDIA H200", "compute_capability": "9.0",
                             "memory_total_mib": 143771}
    json.dumps(result)  # the file it is written to
    broken = Step("build", 300, 5.0, error="the build failed")
    assert verdicts.summary("cuda", False, [good, broken], None, {})["passed"] is False
    failed = Step("split", 45, 5.0, [Check("d", False, "")])
    assert verdicts.summary("cpu", True, [good, failed], None, {})["passed"] is False
    assert verdicts.summary("cpu", True, [], None, {})["passed"] is False


def test_the_budgets_fit_the_device_run() -> None:
    assert sum(verdicts.BUDGET_SECONDS.values()) <= verdicts.RUN_BUDGET_SECONDS == 9 * 60
    others = sum(verdicts.BUDGET_SECONDS.values()) - verdicts.BUDGET_SECONDS["build"]
    shell_timeout = 330  # tools/gpu-check.sh's `timeout` on the build
    assert f"timeout {shell_timeout} " in (REPOSITORY / "tools" / "gpu-check.sh").read_text()
    assert shell_timeout + others <= 600, "a build at its limit still ends inside one call"


def test_the_comparison_runs_at_8_32_and_64_streams_on_the_gpu() -> None:
    args = argparse.Namespace(quick=False, mode="cuda", llama_server=Path("/b/llama-server"))
    command = bench_command(args, Path("/out"))
    streams = command.index("--streams")
    assert command[streams + 1:streams + 4] == ["8", "32", "64"]
    assert command[command.index("--parallel") + 1] == "64"
    assert command[command.index("--gpu-layers") + 1] == "999"
    assert command[command.index("--name") + 1] == "gpu_check_llama_server_cuda"
    quick = bench_command(argparse.Namespace(quick=True, mode="cpu",
                                             llama_server=Path("x")), Path("/out"))
    assert "--gpu-layers" not in quick and quick[quick.index("--streams") + 1] == "2"


def test_llama_cpp_is_configured_for_one_cuda_architecture_with_rpc_and_the_server() -> None:
    line = llama_build.configure_command(Path("/src"), Path("/build"), "90")
    assert "-DGGML_CUDA=ON" in line and "-DCMAKE_CUDA_ARCHITECTURES=90" in line
    for flag in ("-DGGML_RPC=ON", "-DBUILD_SHARED_LIBS=ON", "-DLLAMA_BUILD_SERVER=ON",
                 "-DLLAMA_USE_PREBUILT_UI=OFF", "-DCMAKE_INSTALL_RPATH=$ORIGIN"):
        assert flag in line
    assert not [flag for flag in llama_build.configure_command(Path("/s"), Path("/b"), None)
                if "CUDA" in flag]
    build = llama_build.build_command(Path("/build"), 16)
    assert build[-2:] == ["-j", "16"] and "llama-server" in build and "mtmd" in build


def test_the_libraries_are_installed_with_their_links(tmp_path: Path) -> None:
    bin_dir = tmp_path / "build" / "bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "libggml-cuda.so.0.9.1").write_bytes(b"\x7fELF")
    os.symlink("libggml-cuda.so.0.9.1", bin_dir / "libggml-cuda.so.0")
    os.symlink("libggml-cuda.so.0", bin_dir / "libggml-cuda.so")
    (bin_dir / "llama-server").write_bytes(b"\x7fELF")
    lib = tmp_path / "site" / "llama_cpp" / "lib"
    lib.mkdir(parents=True)
    (lib / "libggml-cuda.so").write_text("an older one")
    names = llama_build.install_libraries(tmp_path / "build", lib)
    assert sorted(names) == ["libggml-cuda.so", "libggml-cuda.so.0", "libggml-cuda.so.0.9.1"]
    assert (lib / "libggml-cuda.so").resolve() == (lib / "libggml-cuda.so.0.9.1")
    assert (lib / "libggml-cuda.so").read_bytes() == b"\x7fELF"
    assert not (lib / "llama-server").exists()
