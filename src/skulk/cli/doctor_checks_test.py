from pathlib import Path

from skulk.cli.doctor_checks import cpu_features, engine_checks, free_memory, python_version
from skulk.worker.engines.mlx.doctor import mlx_install


def test_python_older_than_311_fails() -> None:
    assert python_version((3, 10)).level == "FAIL"
    assert python_version((3, 12)).level == "OK"


def test_a_cpu_without_avx2_warns(tmp_path: Path) -> None:
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor : 0\nflags : fpu sse4_2 avx\n")
    slow = cpu_features(cpuinfo, machine="x86_64")
    assert slow.level == "WARN" and "AVX2" in slow.fix
    cpuinfo.write_text("flags : fpu avx avx2 fma f16c\n")
    assert cpu_features(cpuinfo, machine="x86_64").detail.endswith("avx2 fma f16c")


def test_mlx_on_linux_without_openblas_warns_with_the_package(tmp_path: Path) -> None:
    [check] = mlx_install("linux", openblas=tmp_path / "absent.so")
    assert check.level in ("WARN", "OK")  # OK only where MLX is not installed at all
    if check.level == "WARN":
        assert check.fix == "apt-get install libopenblas0-pthread"


def test_memory_thresholds() -> None:
    assert free_memory(512 * 1024**2).level == "FAIL"
    assert free_memory(2 * 1024**3).level == "WARN"
    assert free_memory(64 * 1024**3).level == "OK"


def test_each_engine_brings_its_own_checks() -> None:
    names = [check.name for check in engine_checks()]
    assert names[0] == "llama.cpp" and "MLX" in names
