import json
import socket
import subprocess
import sys
from pathlib import Path

from skulk.models.store.manifest import StoredFile, StoreEntry, write_entry
from skulk.models.store.pull import PARTIAL_DIR
from skulk.models.store.pull_progress import ProgressRecord, progress_path
from skulk.shared.types.ids import ModelId, NodeId
from skulk.shared.types.telemetry import GpuDevice
from skulk.worker.engines.llama_cpp.description import built_gpu_backends
from skulk.worker.telemetry import probe_backends, read_telemetry


def test_readings_are_real_and_positive() -> None:
    reading = read_telemetry(NodeId("n"), has_worker=True, backends=probe_backends())
    assert 0 < reading.memory_available_bytes <= reading.memory_total_bytes
    assert reading.cpu_count >= 1
    assert reading.hostname == socket.gethostname()


def test_llama_cpp_backend_is_claimed_when_importable() -> None:
    assert "llama_cpp-cpu" in probe_backends()


def test_readings_carry_the_gpus_probed_and_a_cpu_build_claims_no_gpu() -> None:
    gpu = GpuDevice(name="NVIDIA test GPU", backend="cuda", vram_total_bytes=8 * 1024**3,
                    vram_free_bytes=7 * 1024**3)
    reading = read_telemetry(NodeId("n"), has_worker=True, backends=[], gpus=[gpu])
    assert reading.gpus == [gpu]
    if not built_gpu_backends():  # this machine's llama-cpp-python is a CPU build
        assert "llama_cpp-cpu" in probe_backends(gpus=[gpu])



def test_mlx_is_claimed_by_platform_without_being_imported() -> None:
    # A fresh interpreter: another test in this process may have imported mlx already.
    code = ("import json, sys; from skulk.worker.telemetry import probe_backends; "
            "print(json.dumps([probe_backends('linux'), probe_backends('darwin'), "
            "sorted(m for m in sys.modules if m == 'mlx' or m.startswith('mlx.'))]))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=60).stdout
    linux, darwin, imported = json.loads(out)
    assert "mlx-cpu" in linux and "mlx-metal" not in linux
    assert "mlx-metal" in darwin and "mlx-cpu" not in darwin
    assert imported == []


def test_readings_list_the_stores_complete_models(tmp_path: Path) -> None:
    complete, partial = tmp_path / "tiny-gguf", tmp_path / "half-gguf"
    complete.mkdir()
    partial.mkdir()  # no manifest: not a stored model yet
    stored = StoredFile(name="m.gguf", size_bytes=3, sha256="b" * 64)
    write_entry(complete, StoreEntry(directory="tiny-gguf", model_id=ModelId("tiny"),
                                     format="gguf", files=[stored]))
    reading = read_telemetry(NodeId("n"), has_worker=True, backends=[], models_dir=tmp_path,
                             weights_port=4321)
    assert reading.weights_port == 4321
    assert [(h.model_id, h.directory, h.format) for h in reading.held_models] == [
        ("tiny", "tiny-gguf", "gguf")]
    assert reading.held_models[0].files[0].model_dump() == stored.model_dump()


def test_a_stage_copy_is_held_with_its_layers(tmp_path: Path) -> None:
    stored = StoredFile(name="config.json", size_bytes=2, sha256="c" * 64)
    for directory, layers in [("tiny-mlx", None), ("tiny-mlx-layers-0-4", (0, 4))]:
        (tmp_path / directory).mkdir()
        write_entry(tmp_path / directory, StoreEntry(
            directory=directory, model_id=ModelId("tiny"), format="mlx", files=[stored],
            layers=layers))
    reading = read_telemetry(NodeId("n"), has_worker=True, backends=[], models_dir=tmp_path)
    assert [(h.directory, h.layers) for h in reading.held_models] == [
        ("tiny-mlx", None), ("tiny-mlx-layers-0-4", (0, 4))]


def test_a_pull_under_way_in_the_store_is_in_the_readings(tmp_path: Path) -> None:
    record = ProgressRecord(progress_path(tmp_path / PARTIAL_DIR, "tiny-gguf-q4_0"),
                            ModelId("tiny"), "org/Tiny-GGUF", lambda done, total: None,
                            clock=lambda: 1000.0)
    record(3 << 20, 10 << 20)
    reading = read_telemetry(NodeId("n"), has_worker=True, backends=[], models_dir=tmp_path)
    assert [(p.model_id, p.repo, p.done_bytes, p.total_bytes, p.updated_at)
            for p in reading.pulls] == [("tiny", "org/Tiny-GGUF", 3 << 20, 10 << 20, 1000.0)]
    record.remove()
    assert read_telemetry(NodeId("n"), has_worker=True, backends=[],
                          models_dir=tmp_path).pulls == []


def test_a_memory_limit_caps_what_the_node_lends_and_its_runners_use_it_up() -> None:
    from skulk.worker.telemetry import lent_memory

    gib = 1024**3
    assert lent_memory(24 * gib, 20 * gib, None, 5 * gib) == (24 * gib, 20 * gib)
    assert lent_memory(24 * gib, 20 * gib, 4 * gib, 0) == (4 * gib, 4 * gib)
    assert lent_memory(24 * gib, 20 * gib, 4 * gib, 3 * gib) == (4 * gib, 1 * gib)
    assert lent_memory(24 * gib, 2 * gib, 4 * gib, 0) == (4 * gib, 2 * gib), \
        "never more than the machine has free"
    assert lent_memory(24 * gib, 20 * gib, 4 * gib, 6 * gib) == (4 * gib, 0)
