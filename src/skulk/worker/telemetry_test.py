from skulk.shared.types.ids import NodeId
from skulk.worker.telemetry import probe_backends, read_telemetry


def test_readings_are_real_and_positive() -> None:
    reading = read_telemetry(NodeId("n"), has_worker=True, backends=probe_backends())
    assert 0 < reading.memory_available_bytes <= reading.memory_total_bytes
    assert reading.cpu_count >= 1


def test_llama_cpp_backend_is_claimed_when_importable() -> None:
    assert "llama_cpp-cpu" in probe_backends()
