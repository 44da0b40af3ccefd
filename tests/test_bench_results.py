"""bench/results.py: each run's figures as JSON stamped with date, machine and commit, in
the form the website's charts read."""

import json
import subprocess
import sys
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPOSITORY))
sys.path.insert(0, str(REPOSITORY / "website"))

from bench.results import write_result  # noqa: E402

from skulk_site.charts import load_results, newest, provenance  # noqa: E402


def test_a_written_result_carries_date_machine_commit_and_is_charted(tmp_path: Path) -> None:
    payload = {"skulk": {"ttft_ms": 100.0, "decode_tps": 80.0},
               "direct": {"ttft_ms": 70.0, "decode_tps": 82.0}}
    path = write_result("chat_latency", payload, directory=tmp_path)
    document = json.loads(path.read_text())
    assert path.name.startswith("chat_latency-") and path.name.endswith("Z.json")
    assert document["results"] == payload and document["benchmark"] == "chat_latency"
    head = subprocess.run(["git", "-C", str(REPOSITORY), "rev-parse", "HEAD"],
                          capture_output=True, text=True, check=True).stdout.strip()
    assert document["commit"].removesuffix("+dirty") == head
    machine = document["machine"]
    assert machine["cores"] >= 1 and machine["memory_gib"] > 0
    assert f"{machine['cores']}-core" in machine["summary"]
    assert document["date"].endswith("+00:00")
    chosen = newest(load_results(tmp_path), "chat_latency", "skulk")
    assert chosen == document
    assert provenance(document).startswith(f"Measured on {machine['summary']} (load average")
