import httpx
import pytest

from skulk import __version__
from skulk.api.app import create_app
from skulk.api.routers.instances_test import api_context
from skulk.testing.placement import node
from skulk.versions import Versions


@pytest.mark.anyio
async def test_version_answers_what_the_node_reports() -> None:
    context, _ = api_context([node("a")])
    context.operations.versions = lambda: Versions(skulk=__version__, git_commit="abc1234",
                                        python="3.11.7", ggml="0.25.3")
    transport = httpx.ASGITransport(app=create_app(context))
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
        answer = await client.get("/version")
    assert answer.status_code == 200
    assert answer.json() == {"skulk": __version__, "git_commit": "abc1234", "python": "3.11.7",
                             "llama_cpp_python": None, "ggml": "0.25.3", "mlx": None,
                             "mlx_lm": None}
