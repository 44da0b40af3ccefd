"""The `speculative` request field and the drafted/accepted usage in the OpenAI dialect:
parsed at the edge, refused with a 400 naming the field when malformed, documented in
the OpenAPI schema; usage reports drafting in OpenAI's and Skulk's terms."""

from pathlib import Path

import httpx
import pytest

from skulk.api.adapters.openai_chat import ChatCompletionRequest, plan_chat, usage_body
from skulk.models.catalog import ModelCatalog
from skulk.node import Node
from skulk.node_test import MESSAGES, node, url  # noqa: F401  (the whole-node fixture)
from skulk.shared.types.chunks import Usage
from skulk.shared.types.tasks import SpeculativeParams


def test_the_field_reaches_the_generation_parameters(tmp_path: Path) -> None:
    card = ModelCatalog.builtin(tmp_path).resolve("smollm2-135m")
    assert card is not None
    asked = ChatCompletionRequest.model_validate({
        "model": "smollm2-135m", "messages": MESSAGES,
        "speculative": {"drafter": "ngram", "max_draft": 6}})
    assert plan_chat(asked, card).params.speculative == SpeculativeParams(
        drafter="ngram", max_draft=6)
    absent = ChatCompletionRequest.model_validate({"model": "smollm2-135m",
                                                   "messages": MESSAGES})
    assert plan_chat(absent, card).params.speculative is None


def test_usage_reports_drafting_only_when_it_ran() -> None:
    plain = usage_body(Usage(prompt_tokens=5, completion_tokens=7))
    assert plain == {"prompt_tokens": 5, "completion_tokens": 7, "total_tokens": 12}
    drafted = usage_body(Usage(prompt_tokens=5, completion_tokens=7, drafter="ngram",
                               drafted_tokens=9, accepted_tokens=4))
    assert drafted is not None
    assert drafted["completion_tokens_details"] == {"accepted_prediction_tokens": 4,
                                                    "rejected_prediction_tokens": 5}
    assert drafted["speculative"] == {"drafter": "ngram", "drafted_tokens": 9,
                                      "accepted_tokens": 4}


@pytest.mark.anyio
@pytest.mark.parametrize("bad", [{"drafter": "magic"}, {"drafter": "ngram", "max_draft": 0},
                                 {"drafter": "ngram", "max_draft": 99}, {"max_draft": 4},
                                 "ngram"])
async def test_bad_values_are_a_400_naming_the_field(node: Node, bad: object) -> None:  # noqa: F811
    async with httpx.AsyncClient(base_url=url(node), timeout=30) as http:
        response = await http.post("/v1/chat/completions", json={
            "model": "smollm2-135m", "messages": MESSAGES, "speculative": bad})
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["param"].startswith("speculative"), error


@pytest.mark.anyio
async def test_a_valid_request_is_served_and_the_schema_documents_the_field(
        node: Node) -> None:  # noqa: F811
    async with httpx.AsyncClient(base_url=url(node), timeout=30) as http:
        response = await http.post("/v1/chat/completions", json={
            "model": "smollm2-135m", "messages": MESSAGES, "max_tokens": 2,
            "speculative": {"drafter": "none"}})
        assert response.status_code == 200, response.text
        schema = (await http.get("/openapi.json")).json()
    wire = schema["components"]["schemas"]["WireSpeculative"]
    assert set(wire["properties"]) == {"drafter", "max_draft"}
    assert "ngram" in wire["properties"]["drafter"]["enum"]


def test_metrics_count_drafted_and_accepted_tokens_per_instance() -> None:
    from skulk.api.metrics import ApiMetrics
    metrics = ApiMetrics()
    metrics.count_speculation("inst-1", Usage(prompt_tokens=3, completion_tokens=9,
                                              drafter="ngram", drafted_tokens=8,
                                              accepted_tokens=6))
    metrics.count_speculation("inst-1", Usage(prompt_tokens=3, completion_tokens=4))
    text = metrics.exposition().decode()
    assert 'skulk_speculative_drafted_tokens_total{drafter="ngram",instance_id="inst-1"} 8.0' \
        in text
    assert 'skulk_speculative_accepted_tokens_total{drafter="ngram",instance_id="inst-1"} 6.0' \
        in text
