import pytest

from skulk.api.routers.instances_test import api_context, serve
from skulk.testing.placement import node


@pytest.mark.anyio
async def test_every_live_node_with_an_api_is_a_target() -> None:
    a, b, c, d = node("a"), node("b"), node("c"), node("d")
    readings = [a.model_copy(update={"api_url": "http://10.0.0.1:52415", "hostname": "one"}),
                b.model_copy(update={"api_url": "https://[fd00::2]:8443"}),
                c.model_copy(update={"api_url": None}),  # no API on this one
                d.model_copy(update={"api_url": "http://10.0.0.4:52415"})]
    context, _ = api_context(readings, live={"a", "b", "c"})  # d is gone
    async with serve(context) as client:
        targets = (await client.get("/v1/prometheus/targets")).json()
    assert targets == [
        {"targets": ["10.0.0.1:52415"], "labels": {"__scheme__": "http",
                                                   "skulk_node_id": "a",
                                                   "skulk_hostname": "one"}},
        {"targets": ["[fd00::2]:8443"], "labels": {"__scheme__": "https",
                                                   "skulk_node_id": "b",
                                                   "skulk_hostname": ""}}]
