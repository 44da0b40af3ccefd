"""Schemathesis against the OpenAPI document of a real node, as an operator runs it: the
API key on, every route, bodies as generated (no field clamped). No 5xx, every response
(status, content type, body) as documented, and no request outlives its deadline.

The node caps every generation with `--max-tokens` (a request that leaves its limit unset
may otherwise generate to the context limit and hold the one runner for minutes). It gets
a node of its own: it places and deletes instances at random, and the node the other test
modules share must keep exactly the one instance they expect.
"""

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.node_process import NodeProcess

CHECKS = ("not_a_server_error,response_schema_conformance,status_code_conformance,"
          "content_type_conformance")
KEY = "fuzz-key"
AUTH = {"Authorization": f"Bearer {KEY}"}
MOST_TOKENS = 16
# Each request's deadline: a generation of MOST_TOKENS, or a placement and load of the
# bundled model, on a loaded 2-core machine.
REQUEST_SECONDS = 30
FUZZ_SECONDS = 35


def _ready(node: NodeProcess) -> bool:
    state = httpx.get(f"{node.url}/state", headers=AUTH, timeout=10).json()
    return any(all(state["runners"].get(r, {}).get("kind") == "ready" for r in i["shards"])
               for i in state["instances"].values())


@pytest.fixture
def fuzzed_node(tmp_path: Path) -> Iterator[NodeProcess]:
    node = NodeProcess(tmp_path / "node", "--serve", "smollm2-135m", "--api-key", KEY,
                       "--max-tokens", str(MOST_TOKENS))
    node.start()
    try:
        node.wait_until(lambda: _ready(node), 120.0, "the bundled model to be ready")
        yield node
    finally:
        node.stop()


def test_fuzzing_the_api_finds_no_server_error_no_schema_break_and_no_hung_request(
        fuzzed_node: NodeProcess, tmp_path: Path) -> None:
    url = fuzzed_node.url
    assert httpx.get(f"{url}/v1/models", timeout=10).status_code == 401, "the key is on"
    executable = shutil.which("schemathesis", path=str(Path(sys.executable).parent))
    assert executable is not None, "schemathesis is a test dependency: make install"
    started = time.monotonic()
    result = subprocess.run(
        [executable, "run", f"{url}/openapi.json", "--header", f"Authorization: Bearer {KEY}",
         "--max-examples", "25", "--max-time", str(FUZZ_SECONDS),
         "--request-timeout", str(REQUEST_SECONDS), "--seed", "1", "--checks", CHECKS,
         # Cancelling random command ids only ever answers 404; it is covered elsewhere.
         "--exclude-path", "/v1/cancel/{command_id}",
         # Stopping the node would end the run; tests/test_cli_node_commands.py covers it.
         "--exclude-path", "/v1/node/stop", "--report-dir", str(tmp_path)],
        capture_output=True, text=True, timeout=FUZZ_SECONDS + 4 * REQUEST_SECONDS,
        cwd=tmp_path, env={**os.environ,
                           "PYTHONPATH": str(Path(__file__).resolve().parents[1])})
    elapsed = time.monotonic() - started
    summary = result.stdout[result.stdout.rfind("SUMMARY"):] if "SUMMARY" in result.stdout \
        else result.stdout[-1500:]
    print(f"schemathesis ran {elapsed:.0f} s\n{summary}")
    assert result.returncode == 0, result.stdout[-6000:]
    assert "passed" in result.stdout
    # A request past its deadline is reported as an error (a timeout) and fails the run;
    # none may hang past the time budget either.
    assert "timed out" not in result.stdout.lower(), result.stdout[-6000:]
    assert elapsed < FUZZ_SECONDS + 2 * REQUEST_SECONDS
    assert httpx.get(f"{url}/healthz", timeout=10).status_code == 200
