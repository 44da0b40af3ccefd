"""The website's Python examples run as written against a real node serving the bundled
model (only the node's address changes), so the pages a newcomer copies from work."""

import contextlib
import io
import re
import subprocess
import textwrap
from pathlib import Path

import pytest

from tests.node_process import NodeProcess

DOCS = Path(__file__).resolve().parents[1] / "website" / "docs"
DOCUMENTED_URL = "http://127.0.0.1:52415"
# A fenced Python block, indented as it is inside a content tab or not.
def examples(page: str, language: str = "python") -> list[str]:
    block = re.compile(rf"^( *)```{language}\n(.*?)^\1```", re.MULTILINE | re.DOTALL)
    return [textwrap.dedent(code) for _, code in block.findall((DOCS / page).read_text())]


def python_examples(page: str) -> list[str]:
    return examples(page, "python")


def test_the_pages_hold_the_examples_this_test_runs() -> None:
    assert len(python_examples("getting-started.md")) == 3  # openai, anthropic, ollama
    assert len(python_examples("sessions.md")) == 1


@pytest.mark.parametrize("page, index", [("getting-started.md", 0), ("getting-started.md", 1),
                                         ("getting-started.md", 2), ("sessions.md", 0)])
def test_an_example_runs_against_a_real_node(serving_node: NodeProcess, page: str,
                                             index: int) -> None:
    code = python_examples(page)[index]
    assert DOCUMENTED_URL in code
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(code.replace(DOCUMENTED_URL, serving_node.url), page, "exec"), {})
    assert printed.getvalue().strip(), f"example {index} of {page} printed nothing"


def test_the_session_walkthrough_in_curl_runs(serving_node: NodeProcess) -> None:
    [script] = examples("sessions.md", "sh")
    assert DOCUMENTED_URL in script
    ran = subprocess.run(["bash", "-euo", "pipefail", "-c",
                          script.replace(DOCUMENTED_URL, serving_node.url)],
                         capture_output=True, text=True, timeout=120)
    assert ran.returncode == 0, ran.stderr
    assert '"text"' in ran.stdout and '"turns":1' in ran.stdout.replace(" ", "")
    assert '"closed"' in ran.stdout
