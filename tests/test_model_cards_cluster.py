"""A model added to one running node's store is known to every node: listed by the other
node's API, placed through it on the node that holds the weights, chatted with through it,
and forgotten by it once removed."""

import subprocess
import sys
from pathlib import Path

import httpx
import openai
import pytest

from skulk.testing.models import bundled_gguf
from tests.node_process import NodeProcess, meshed_nodes

pytestmark = pytest.mark.integration

MODEL = "smol-added"


def _models(node: NodeProcess) -> list[str]:
    return [m["id"] for m in node.get("/v1/models").json()["data"]]


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "skulk.cli.main", "models", *args],
                          capture_output=True, text=True, timeout=120)


def test_a_card_added_on_one_node_is_listed_placed_and_served_through_another(
        tmp_path: Path) -> None:
    with meshed_nodes(tmp_path, 2) as (a, b):
        a_id, b_id = a.node_id(), b.node_id()
        b.wait_until(lambda: sum(n["alive"] for n in b.cluster()["nodes"]) == 2, 60,
                     "both nodes to see each other")
        assert MODEL not in _models(b)

        added = _cli("add", str(bundled_gguf()), "--model-id", MODEL,
                     "--data-dir", str(a.data_dir))
        assert added.returncode == 0, added.stderr
        b.wait_until(lambda: MODEL in _models(b), 60, f"B to list {MODEL}")
        listed = b.get(f"/v1/models/{MODEL}").json()
        assert listed["stored_on"] == [a_id] and listed["available_formats"] == []
        store = a.get("/models/store").json()["models"]
        assert [(m["model_id"], m["announced"]) for m in store] == [(MODEL, True)]

        placed = httpx.post(f"{b.url}/place_instance", timeout=60,
                            json={"model_id": MODEL, "excluded_nodes": [b_id]})
        assert placed.status_code == 201, placed.text
        assert {rank["node_id"] for rank in placed.json()["ranks"]} == {a_id}
        b.wait_model_ready()
        client = openai.OpenAI(base_url=f"{b.url}/v1", api_key="unused", max_retries=0)
        reply = client.chat.completions.create(
            model=MODEL, max_tokens=8, temperature=0.0,
            messages=[{"role": "user", "content": "Say hello."}])
        assert reply.choices[0].message.content

        instance_id = placed.json()["instance_id"]
        assert httpx.delete(f"{b.url}/instance/{instance_id}", timeout=30).status_code == 200
        removed = _cli("remove", MODEL, "--data-dir", str(a.data_dir))
        assert removed.returncode == 0, removed.stderr
        b.wait_until(lambda: MODEL not in _models(b), 60, f"B to forget {MODEL}")
        assert a.get("/models/store").json()["models"] == []
