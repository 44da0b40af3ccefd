"""`skulk --version`, `skulk doctor --url`, `skulk logs` and `skulk stop` against a real
node, which also warns in one line that its API is open to the network without a key."""

import select
import subprocess
import sys
from pathlib import Path

from tests.node_process import NodeProcess
from tests.skulk_command import doctor_rows, run_skulk, skulk_env


def test_version_names_skulk_its_commit_and_engines() -> None:
    result = run_skulk("--version")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("skulk 0.1.0 (git ")  # the tests run from a checkout
    assert lines[1].startswith("Python 3.")
    assert lines[2].startswith("llama-cpp-python")
    assert "MLX" in lines[3]


def test_an_open_node_warns_serves_its_version_and_log_and_stops_when_asked(
        tmp_path: Path) -> None:
    node = NodeProcess(tmp_path, "--api-host", "0.0.0.0", "--no-worker").start(timeout=60)
    follower = None
    try:
        warnings = [line for line in node.log().splitlines() if "without --api-key" in line]
        assert len(warnings) == 1 and "0.0.0.0" in warnings[0]
        assert "give --api-key KEY" in warnings[0]
        assert node.get("/version").json()["git_commit"]
        # The API answers a moment before the node logs that it is up.
        node.wait_until(lambda: " is up" in node.log(), 60, "the node to log that it is up")
        shown = run_skulk("logs", "--url", node.url, "--component", "cli")
        assert shown.returncode == 0 and " is up" in shown.stdout, shown.stderr
        assert run_skulk("logs", "--url", node.url, "--level", "error").stdout == ""
        doctor = run_skulk("doctor", "--url", node.url, "--api-port", str(node.api_port),
                           "--data-dir", str(tmp_path))
        assert doctor.returncode == 0, doctor.stdout
        rows = doctor_rows(doctor.stdout)
        assert rows[f"API port {node.api_port}"].startswith("WARN")  # our own node has it
        assert rows["running node"].startswith("OK") and node.url in rows["running node"]
        assert rows["cluster plane"].startswith("OK")
        follower = subprocess.Popen(
            [sys.executable, "-m", "skulk.cli.main", "logs", "-f", "--url", node.url],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=skulk_env())
        assert follower.stdout is not None
        assert select.select([follower.stdout], [], [], 20)[0], "the follower printed nothing"
        first = follower.stdout.readline()  # it follows now
        stopped = run_skulk("stop", "--url", node.url)
        assert stopped.returncode == 0, stopped.stderr
        assert stopped.stdout.splitlines()[-1].endswith("stopped")
        assert node.process is not None and node.process.wait(20) == 0
        follower.wait(20)
        assert follower.stderr is not None
        out, err = first + follower.stdout.read(), follower.stderr.read()
        # It polls each second, so the last lines before the stop may go unseen.
        assert follower.returncode == 0 and " is up" in out
        assert err.strip() == "skulk: the node stopped"
    finally:
        if follower is not None and follower.poll() is None:
            follower.kill()
        node.stop()
