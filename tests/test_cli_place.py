"""A placement that fails, seen through the real `skulk` command and the real openai client:
the reason reaches the user, the exit code says it failed, and nobody retries it. And
every command ends quietly when the reader of its output leaves early."""

import os
import subprocess
import sys
from collections.abc import Iterator

import httpx2
import openai
import pytest

from skulk.testing.ports import free_port
from tests.node_process import NodeProcess
from tests.skulk_command import run_skulk, skulk_env

MODEL = "qwen2.5-0.5b-instruct"
# What the worker reports when the hub does not answer, as the master's removal says it.
UNREACHABLE = "cannot list Qwen/Qwen2.5-0.5B-Instruct-GGUF on the hub"


@pytest.fixture(scope="module")
def hubless_node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NodeProcess]:
    """A node whose model hub refuses every connection (nothing listens on its port) and
    whose store holds nothing but the bundled model."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{free_port()}")
        node = NodeProcess(tmp_path_factory.mktemp("hubless")).start()
    try:
        yield node
    finally:
        node.stop()


def test_skulk_place_waits_and_fails_with_the_reason(hubless_node: NodeProcess) -> None:
    placed = run_skulk("place", MODEL, "--url", hubless_node.url, "--engine", "llama_cpp",
                       "--min-nodes", "1", "--exclude", "node-elsewhere", timeout=120)
    assert placed.returncode == 1, (placed.stdout, placed.stderr)
    assert f"placed {MODEL} as instance" in placed.stdout and "waiting" in placed.stdout
    [line] = placed.stderr.splitlines()
    assert line.startswith(f"skulk: placing {MODEL} failed: instance inst-")
    assert "gave it up" in line and UNREACHABLE in line
    # The master's log says why too, not "deleted on request".
    removed = [entry for entry in hubless_node.log().splitlines()
               if "skulk.master.master" in entry and " removed: " in entry]
    assert removed and all(UNREACHABLE in entry for entry in removed), removed
    assert hubless_node.state()["instances"] == {}


def test_the_openai_client_gets_the_reason_once_and_does_not_retry(
        hubless_node: NodeProcess) -> None:
    sent: list[httpx2.Request] = []
    # The openai SDK runs on httpx2, a fork of httpx with its own classes.
    with httpx2.Client(event_hooks={"request": [sent.append]}, timeout=120) as http:
        client = openai.OpenAI(base_url=f"{hubless_node.url}/v1", api_key="unused",
                               http_client=http)
        with pytest.raises(openai.APIStatusError) as refused:
            client.chat.completions.create(
                model=MODEL, messages=[{"role": "user", "content": "Hello"}])
    assert len(sent) == 1, [str(r.url) for r in sent]
    assert refused.value.status_code == 422
    assert UNREACHABLE in refused.value.message


def closed_pipe_run(*args: str) -> subprocess.CompletedProcess[str]:
    """`skulk ARGS` writing into a pipe whose reader has already gone (`| head` after its
    first line), its stderr kept."""
    reader, writer = os.pipe()
    os.close(reader)
    try:
        return subprocess.run([sys.executable, "-m", "skulk.cli.main", *args], stdout=writer,
                              stderr=subprocess.PIPE, text=True, timeout=60, env=skulk_env())
    finally:
        os.close(writer)


@pytest.mark.parametrize("args", [("models", "list"), ("completion", "bash")])
def test_a_closed_pipe_ends_a_command_quietly(args: tuple[str, ...]) -> None:
    done = closed_pipe_run(*args)
    assert done.stderr == "" and done.returncode == 141


def test_help_into_a_closed_pipe_is_quiet_too() -> None:
    # argparse drops its own write errors, so help exits 0 however the pipe is.
    for args in (("--help",), ("place", "--help")):
        assert closed_pipe_run(*args).stderr == ""


def test_status_into_head_ends_quietly(hubless_node: NodeProcess) -> None:
    done = closed_pipe_run("status", "--url", hubless_node.url)
    assert done.stderr == "" and done.returncode == 141
    # And a real `head`, as the user typed it.
    piped = subprocess.run(f"{sys.executable} -m skulk.cli.main status --url "
                           f"{hubless_node.url} | head -n 1", shell=True, capture_output=True,
                           text=True, timeout=60, env=skulk_env())
    assert piped.stdout.startswith("node ") and "Traceback" not in piped.stderr
