"""`skulk run` refused at start: one line on stderr saying what to do, exit code 2 for a
usage mistake and 1 for the machine, never a traceback."""

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from skulk.startup_failure import ENVIRONMENT, USAGE
from skulk.testing.ports import free_port
from tests.skulk_command import run_skulk, writable


@pytest.fixture
def held_port() -> Iterator[int]:
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        yield held.getsockname()[1]


def refused(data_dir: Path, *args: str, env: dict[str, str] | None = None
            ) -> tuple[int, str]:
    """Exit code and the one line a refused `skulk run` printed."""
    result = run_skulk("run", "--data-dir", str(data_dir), "--no-discover", "--api-port",
                       str(free_port()), *args, env=env)
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    assert lines[0].startswith("skulk run: ")
    return result.returncode, lines[0]


def test_an_api_port_in_use_names_the_port_and_the_flag(tmp_path: Path,
                                                         held_port: int) -> None:
    code, line = refused(tmp_path, "--api-port", str(held_port))
    assert code == ENVIRONMENT
    assert f"the API port {held_port} is already in use" in line and "--api-port" in line


def test_a_cluster_port_in_use_names_the_port_and_the_flag(tmp_path: Path,
                                                           held_port: int) -> None:
    code, line = refused(tmp_path, "--listen", f"tcp/127.0.0.1:{held_port}")
    assert code == ENVIRONMENT
    assert f"port {held_port} is already in use" in line and "--listen" in line


def test_a_peer_without_protocol_or_port_shows_the_expected_form(tmp_path: Path) -> None:
    code, line = refused(tmp_path, "--peer", "10.0.0.1")
    assert code == USAGE
    assert line.endswith("expected tcp/HOST:PORT, e.g. --peer tcp/10.0.0.2:7447")


def test_a_bad_listen_endpoint_shows_the_expected_form(tmp_path: Path) -> None:
    code, line = refused(tmp_path, "--listen", "localhost")
    assert code == USAGE and "e.g. --listen tcp/0.0.0.0:7447" in line


def test_a_data_dir_that_cannot_be_written(tmp_path: Path) -> None:
    read_only = tmp_path / "read-only"
    read_only.mkdir(mode=0o555)
    if read_only.stat().st_uid == 0 and writable(read_only):
        read_only = Path("/proc/skulk-data")  # root writes anywhere but in /proc
    code, line = refused(read_only / "skulk")
    assert code == ENVIRONMENT
    assert f"the data dir {read_only / 'skulk'} cannot be created or written" in line
    assert "--data-dir" in line


def test_an_unknown_served_model_lists_close_matches(tmp_path: Path) -> None:
    code, line = refused(tmp_path, "--serve", "smollm2-135")
    assert code == USAGE
    assert "--serve smollm2-135: no such model" in line and "did you mean smollm2-135m" in line


def test_a_llama_cpp_without_its_library_says_how_to_rebuild(tmp_path: Path) -> None:
    empty = tmp_path / "no-libs"
    empty.mkdir()
    code, line = refused(tmp_path / "data", env={"LLAMA_CPP_LIB_PATH": str(empty)})
    assert code == ENVIRONMENT
    assert "without libllama" in line and "make install" in line
    assert "tools/llama-cpp-backends.sh .venv/bin/python" in line


def test_a_number_out_of_range_is_refused_while_parsing(tmp_path: Path) -> None:
    for flag, value, says in (("--api-port", "99999", "is not a port; give 1 to 65535"),
                              ("--threads", "0", "is too small; give 1 or more"),
                              ("--threads", "-3", "is too small; give 1 or more")):
        code, line = refused(tmp_path, flag, value)
        assert code == USAGE and f"argument {flag}: {value} {says}" in line
