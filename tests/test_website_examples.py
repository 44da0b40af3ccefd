"""The website's Python examples run as written against a real node serving the bundled
model (only the node's address changes), so the pages a newcomer copies from work."""

import contextlib
import io
import re
import textwrap
from pathlib import Path

import pytest

from tests.node_process import NodeProcess

DOCS = Path(__file__).resolve().parents[1] / "website" / "docs"
DOCUMENTED_URL = "http://127.0.0.1:52415"
# A fenced Python block, indented as it is inside a content tab or not.
PYTHON_BLOCK = re.compile(r"^( *)```python\n(.*?)^\1```", re.MULTILINE | re.DOTALL)


def python_examples(page: str) -> list[str]:
    return [textwrap.dedent(block) for _, block in
            PYTHON_BLOCK.findall((DOCS / page).read_text())]


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
