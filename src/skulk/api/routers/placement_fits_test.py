import pytest

from skulk.api.routers.instances_test import api_context, serve
from skulk.api.routers.placement_fits import NodeFit, node_fits
from skulk.testing.placement import GIB, node, nodes, smollm2


def test_each_node_and_engine_says_whether_the_whole_model_fits() -> None:
    cluster = nodes(node("big", 8 * GIB), node("tiny", GIB // 2),
                    node("gguf-only", 8 * GIB, backends=["llama_cpp-cpu"]),
                    node("api", 8 * GIB, has_worker=False))
    fits: dict[tuple[str, str], NodeFit] = {
        (f.node_id, f.engine): f for f in node_fits(smollm2(), cluster)}
    assert fits[("big", "llama_cpp")].fits and fits[("big", "mlx")].fits
    big = fits[("big", "llama_cpp")]
    assert big.needed_bytes is not None and big.needed_bytes < big.usable_bytes
    tiny = fits[("tiny", "mlx")]
    assert not tiny.fits and tiny.reason is not None and "needs" in tiny.reason
    assert fits[("gguf-only", "mlx")].reason == "does not run mlx"
    assert fits[("gguf-only", "mlx")].needed_bytes is None
    assert fits[("api", "llama_cpp")].reason == "runs no worker"
    # Preferred engine first within each node, nodes by id.
    assert [(f.node_id, f.engine) for f in node_fits(smollm2(), cluster)][:2] == [
        ("api", "llama_cpp"), ("api", "mlx")]


def test_a_card_with_one_format_is_judged_for_its_engine_only() -> None:
    fits = node_fits(smollm2(mlx=False), nodes(node("a")))
    assert [f.engine for f in fits] == ["llama_cpp"]


@pytest.mark.anyio
async def test_the_route_lists_the_catalogue_or_one_model() -> None:
    context, _ = api_context(list(nodes(node("a", 8 * GIB), node("b", GIB // 2)).values()),
                             live={"a", "b", "late"})
    async with serve(context) as client:
        body = (await client.get("/placement/fits")).json()
        assert body["waiting_for"] == ["late"]
        [model] = body["models"]
        assert model["model_id"] == "smollm2-135m"
        assert {s["format"] for s in model["sources"]} == {"gguf", "mlx"}
        assert model["size_bytes"] == min(s["size_bytes"] for s in model["sources"])
        verdicts = {(f["node_id"], f["engine"]): f["fits"] for f in model["fits"]}
        assert verdicts[("a", "llama_cpp")] and not verdicts[("b", "mlx")]
        one = await client.get("/placement/fits", params={"model_id": "SmolLM2-135M-Instruct"})
        assert [m["model_id"] for m in one.json()["models"]] == ["smollm2-135m"]
        assert (await client.get("/placement/fits",
                                 params={"model_id": "gpt-9"})).status_code == 404
