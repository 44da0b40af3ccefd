"""`skulk doctor` on this machine, under conditions the test creates: a port it holds
and a data dir that cannot be written."""

import socket
from pathlib import Path

from skulk.testing.ports import free_port
from tests.skulk_command import doctor_rows, run_skulk, writable


def test_a_held_port_and_an_unwritable_data_dir_fail_with_their_fixes(tmp_path: Path) -> None:
    read_only = tmp_path / "read-only"
    read_only.mkdir(mode=0o555)
    unwritable = read_only if not writable(read_only) else Path("/proc")  # root: /proc
    with socket.socket() as held:
        held.bind(("0.0.0.0", 0))
        held.listen()
        port = held.getsockname()[1]
        result = run_skulk("doctor", "--api-port", str(port), "--data-dir",
                           str(unwritable / "skulk"), "--listen", f"tcp/0.0.0.0:{free_port()}",
                           "--url", f"http://127.0.0.1:{free_port()}")
    assert result.returncode == 1, result.stdout + result.stderr
    rows = doctor_rows(result.stdout)
    assert rows[f"API port {port}"].startswith("FAIL") and "--api-port" in rows[
        f"API port {port}"]
    assert rows["data dir"].startswith("FAIL") and "--data-dir" in rows["data dir"]
    assert rows["Python"].startswith("OK")
    assert {"llama.cpp", "MLX", "memory", "discovery", "running node"} <= set(rows)
    assert result.stdout.rstrip().endswith("ok") and "2 failed" in result.stdout
