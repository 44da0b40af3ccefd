"""The model lists every dialect gives, read by the official clients: what the cluster can
answer first (running, then held on some disk), the cards that need a download only with
`?all=true`; a wrong name's 404 suggests close matches in each dialect's format."""

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anthropic
import httpx
import httpx2
import ollama
import openai
import pytest

from skulk.api.app import create_app
from skulk.api.context import ApiContext
from skulk.api.routers.instances_test import InProcessMaster, api_context
from skulk.models.catalog import ModelCatalog
from skulk.shared.types.ids import ModelId
from skulk.shared.types.model_cards import ModelCard, ModelSource
from skulk.shared.types.telemetry import HeldModel
from skulk.testing.placement import GIB, node, smollm2


def card(model_id: str, filename: str, aliases: list[str] | None = None) -> ModelCard:
    return smollm2(mlx=False).model_copy(update={
        "model_id": ModelId(model_id), "aliases": aliases or [],
        "sources": [ModelSource(format="gguf", filename=filename, size_bytes=1000)]})


def held(model_id: str) -> HeldModel:
    return HeldModel(model_id=ModelId(model_id), format="gguf", directory="d", files=[])


@asynccontextmanager
async def cluster(tmp_path: Path) -> AsyncIterator[tuple[ApiContext, InProcessMaster]]:
    """Node `a` (this one) holds smollm2 in its store and `here` in its own files; node `b`
    holds `held-on-b`; nobody holds `qwen3-8b` or `deepseek-r1-distill-llama-8b`."""
    (tmp_path / "here.gguf").write_bytes(b"weights")
    context, master = api_context([
        node("a", 8 * GIB).model_copy(update={"held_models": [held("smollm2-135m")]}),
        node("b").model_copy(update={"held_models": [held("held-on-b")]})])
    context.cluster.catalog = ModelCatalog([
        card("deepseek-r1-distill-llama-8b", "r1.gguf", ["deepseek-r1:8b"]),
        card("held-on-b", "b.gguf"), card("qwen3-8b", "q.gguf", ["qwen3:8b"]),
        card("here", "here.gguf"), smollm2()], tmp_path)
    yield context, master


@asynccontextmanager
async def app_client(context: ApiContext) -> AsyncIterator[
        tuple[httpx2.AsyncClient, anthropic.AsyncAnthropic, ollama.AsyncClient]]:
    """The app's HTTP client (the OpenAI client's too), an Anthropic and an Ollama one.
    The openai and anthropic SDKs run on httpx2, a fork with its own classes; ollama on
    httpx."""
    app = create_app(context)
    async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app),
                                  base_url="http://test") as client:
        claude = anthropic.AsyncAnthropic(base_url="http://test", api_key="k",
                                          http_client=client, max_retries=0)
        local = ollama.AsyncClient(host="http://test", transport=httpx.ASGITransport(app=app))
        yield client, claude, local


@pytest.mark.anyio
async def test_every_dialect_lists_the_models_the_cluster_can_answer_first(
        tmp_path: Path) -> None:
    async with cluster(tmp_path) as (context, _), app_client(context) as (http, claude, local):
        placed = await http.post("/place_instance", json={"model_id": "smollm2-135m"})
        assert placed.status_code == 201, placed.text
        oai = openai.AsyncOpenAI(base_url="http://test/v1", api_key="k", http_client=http)
        listed = [m async for m in oai.models.list()]
        assert [m.id for m in listed] == ["smollm2-135m", "held-on-b", "here"]
        assert [(m.model_extra or {})["status"] for m in listed] == ["running", "held", "held"]
        assert [(m.model_extra or {})["held_by"] for m in listed] == [["a"], ["b"], ["a"]]

        everything = [m async for m in oai.models.list(extra_query={"all": "true"})]
        assert [m.id for m in everything] == ["smollm2-135m", "held-on-b", "here",
                                              "deepseek-r1-distill-llama-8b", "qwen3-8b"]
        assert (everything[-1].model_extra or {})["status"] == "download"
        one = await oai.models.retrieve("qwen3:8b")
        assert (one.model_extra or {})["status"] == "download"

        page = await claude.models.list()
        assert [m.id for m in page.data] == ["smollm2-135m", "held-on-b", "here"]
        assert page.data[0].display_name == "smollm2-135m" and not page.has_more

        tags = await local.list()
        assert [m.model for m in tags.models] == [
            "smollm2-135m:latest", "held-on-b:latest", "here:latest"]


@pytest.mark.anyio
async def test_a_wrong_name_suggests_close_matches_in_each_dialect(tmp_path: Path) -> None:
    async with cluster(tmp_path) as (context, _), app_client(context) as (http, claude, local):
        oai = openai.AsyncOpenAI(base_url="http://test/v1", api_key="k", http_client=http,
                                 max_retries=0)
        with pytest.raises(openai.NotFoundError) as missing:
            await oai.chat.completions.create(model="qwen3:8", messages=[
                {"role": "user", "content": "Hi"}])
        message = missing.value.message
        assert "did you mean qwen3-8b?" in message
        assert "running: none" in message and "ready to load: held-on-b, here" in message
        assert "deepseek" not in message and "all=true" in message

        with pytest.raises(anthropic.NotFoundError) as refused:
            await claude.messages.create(model="deepsek-r1", max_tokens=4, messages=[
                {"role": "user", "content": "Hi"}])
        assert refused.value.body["error"]["type"] == "not_found_error"  # type: ignore[index]
        assert "did you mean deepseek-r1-distill-llama-8b?" in refused.value.message

        with pytest.raises(ollama.ResponseError) as unknown:
            await local.chat(model="smolm2:latest", messages=[{"role": "user", "content": "Hi"}])
        assert unknown.value.status_code == 404
        assert "did you mean smollm2-135m?" in unknown.value.error


@pytest.mark.anyio
async def test_a_name_like_nothing_gets_no_suggestion(tmp_path: Path) -> None:
    async with cluster(tmp_path) as (context, _), app_client(context) as (http, claude, local):
        answer = await http.post("/v1/completions", json={"model": "zz", "prompt": "x"})
    assert answer.status_code == 404
    error = answer.json()["error"]
    assert error["code"] == "model_not_found" and error["param"] == "model"
    assert error["message"].startswith("the model 'zz' does not exist; running: none")
