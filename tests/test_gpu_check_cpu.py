"""tools/gpu-check.sh --cpu-only: the GPU check's steps on this machine's CPU, so their
logic runs in CI. Two real nodes, the bundled model placed whole (no layer on a GPU), the
openai client, a 2-node split. Bounded: --quick sizes, the comparison with llama-server
left out (its four server starts are a benchmark's time; run it by hand without
--skip-bench), and the stand-in model made only when `make gpu-bundle` has run."""

import json
import os
import subprocess
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[1]
EXPECTED_STEPS = ["stand-in", "nodes", "whole", "client", "split", "bench"]


def test_the_cpu_only_check_passes_every_step(tmp_path: Path) -> None:
    done = subprocess.run([str(REPOSITORY / "tools" / "gpu-check.sh"), "--cpu-only",
                           "--quick", "--skip-bench"], cwd=REPOSITORY, capture_output=True,
                          text=True, timeout=240, env={**os.environ, "OUT": str(tmp_path)})
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    result = json.loads((tmp_path / "gpu_check.json").read_text())
    assert result["mode"] == "cpu" and result["passed"] is True and result["gpu"] is None
    assert [step["name"] for step in result["steps"]] == EXPECTED_STEPS
    checks = {check["name"]: check for step in result["steps"] for check in step["checks"]}
    for name in ("telemetry names the GPU", "every layer on the GPU", "chat",
                 "chat, streamed", "embeddings", "JSON-schema answer",
                 "2-node split, device server on the GPU", "chat on the split"):
        assert checks[name]["passed"] is True, checks[name]
    assert checks["VRAM admission against nvidia-smi"]["passed"] is None
    assert checks["comparison with llama-server"]["passed"] is None
    assert "gpu check: PASSED" in (tmp_path / "gpu_check.log").read_text()
