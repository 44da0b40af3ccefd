"""`GET /v1/models` lists announced cards beside built-in and stored ones; `GET
/models/store` shows this node's store."""

from pathlib import Path

import pytest

from skulk.api.routers.instances_test import api_context, serve
from skulk.models.catalog import ModelCatalog
from skulk.models.store.add import AddRequest, add
from skulk.shared.types.events import ModelCardAdded
from skulk.shared.types.ids import NodeId
from skulk.testing import factories as f
from skulk.testing.models import bundled_gguf


@pytest.mark.anyio
async def test_models_and_store_list_what_the_node_and_the_cluster_hold(
        tmp_path: Path) -> None:
    context, master = api_context([])
    catalog = ModelCatalog.builtin(tmp_path)
    catalog.follow_cluster(lambda: context.cluster.replica.state.model_cards)
    context.cluster.catalog = catalog
    add(tmp_path, AddRequest(bundled_gguf(), model_id="smol-added"), catalog.builtin_card)
    catalog.refresh()
    stored = catalog.resolve("smol-added")
    assert stored is not None
    master.emit(ModelCardAdded(card=stored, node_id=NodeId("a")))
    master.emit(ModelCardAdded(card=f.added_card(), node_id=NodeId("b")))

    async with serve(context) as client:
        models = {m["id"]: m for m in (await client.get("/v1/models")).json()["data"]}
        store = (await client.get("/models/store")).json()
    assert {"smollm2-135m", "smol-added", "tiny-added"} <= set(models)
    assert models["smol-added"]["stored_on"] == ["a"]
    assert models["smol-added"]["available_formats"] == ["gguf"]
    assert models["tiny-added"]["stored_on"] == ["b"]
    assert models["tiny-added"]["available_formats"] == []
    assert store["node_id"] == "a" and store["models_dir"] == str(tmp_path)
    [entry] = store["models"]
    assert (entry["model_id"], entry["format"], entry["announced"]) == (
        "smol-added", "gguf", True)
    assert entry["files"][0]["size_bytes"] == bundled_gguf().stat().st_size
