"""The checks against real nodes: two `skulk run` processes on this machine, meshed;
their GPU telemetry, the bundled model placed whole (every layer on the GPU, VRAM against
nvidia-smi), the openai client against it (chat, streaming, embeddings, a JSON schema),
then the model split over both nodes. Each function returns the checks it made."""

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import openai
from bench.gpu_check import nvidia, verdicts
from bench.gpu_check.verdicts import Check, Mode
from tests.node_process import NodeProcess

MODEL = "smollm2-135m"
READY_SECONDS = 120.0
SCHEMA_VALUES = ("yes", "no")
SCHEMA = {"type": "object", "properties": {"answer": {"type": "string",
                                                      "enum": list(SCHEMA_VALUES)}},
          "required": ["answer"], "additionalProperties": False}


def both_seen(nodes: list[NodeProcess]) -> Callable[[], bool]:
    def seen() -> bool:
        alive = [n for n in nodes[0].cluster()["nodes"] if n["alive"] and n["has_worker"]]
        return len(alive) == len(nodes)
    return seen


def telemetry(mode: Mode, node: NodeProcess) -> list[Check]:
    """The node's own reading (the GPU probe runs when the node starts)."""
    me = node.node_id()
    listed = next(n for n in node.cluster()["nodes"] if n["node_id"] == me)
    return [verdicts.telemetry(mode, listed["gpus"], nvidia.gpus())]


def default_candidate(node: NodeProcess) -> dict[str, Any] | None:
    reply = node.get(f"/instance/previews?model_id={MODEL}")
    reply.raise_for_status()
    whole = [c for c in reply.json()["previews"]
             if c["engine"] == "llama_cpp" and c["width"] == 1]
    return next((c for c in whole if c.get("placed_by_default")), whole[0] if whole else None)


# A placement refused (422) right after an instance went may only wait for the nodes'
# next readings (the memory it freed): asked again until this many seconds have passed.
SETTLE_SECONDS = 20.0


def place(node: NodeProcess, **fields: Any) -> dict[str, Any]:
    deadline = time.monotonic() + SETTLE_SECONDS
    while True:
        placed = httpx.post(f"{node.url}/place_instance", timeout=60,
                            json={"model_id": MODEL, "engine": "llama_cpp", **fields})
        if placed.status_code != 422 or time.monotonic() > deadline:
            break
        time.sleep(1.0)
    if placed.status_code != 201:
        raise RuntimeError(f"placing {fields}: {placed.status_code} {placed.text[:600]}")
    return node.wait_instance_ready(placed.json()["instance_id"], READY_SECONDS)


def remove(node: NodeProcess, instance_id: str) -> None:
    httpx.delete(f"{node.url}/instance/{instance_id}", timeout=30).raise_for_status()
    node.wait_until(lambda: instance_id not in node.state()["instances"], 60,
                    "the instance to go")


def whole(mode: Mode, node: NodeProcess, block_count: int) -> tuple[list[Check], str]:
    """Placed on one node: the master's default gives the GPU every layer, and what the
    load took on the GPU stays within the admission's figure. Returns the instance id."""
    candidate = default_candidate(node)
    layers = verdicts.every_layer_on_gpu(mode, candidate, block_count)
    before = sum(g.used_bytes for g in nvidia.gpus())
    instance = place(node, min_nodes=1)
    after = sum(g.used_bytes for g in nvidia.gpus())
    admitted = int(layers.figures.get("vram_admitted_mib") or 0) * verdicts.MIB
    return [layers, verdicts.vram_admission(mode, admitted, before, after)], instance[
        "instance_id"]


def client_checks(node: NodeProcess, width: int, max_tokens: int) -> list[Check]:
    """The openai client against the placed model: a reply, a streamed reply, an
    embedding of the model's width, an answer constrained by a JSON schema."""
    client = openai.OpenAI(base_url=f"{node.url}/v1", api_key="unused", max_retries=0,
                           timeout=120)
    messages: list[Any] = [{"role": "user", "content": "Say something about rivers."}]
    reply = client.chat.completions.create(model=MODEL, messages=messages, temperature=0,
                                           max_tokens=max_tokens)
    checks = [verdicts.answered("chat", reply.choices[0].message.content,
                                reply.usage.completion_tokens if reply.usage else 0)]
    pieces = []
    for chunk in client.chat.completions.create(model=MODEL, messages=messages,
                                                temperature=0, max_tokens=max_tokens,
                                                stream=True):
        if chunk.choices and chunk.choices[0].delta.content:
            pieces.append(chunk.choices[0].delta.content)
    checks.append(verdicts.answered("chat, streamed", "".join(pieces), len(pieces)))
    vector = client.embeddings.create(model=MODEL, input="rivers run to the sea")
    checks.append(verdicts.embedding(vector.data[0].embedding, width))
    constrained = client.chat.completions.create(
        model=MODEL, temperature=0, max_tokens=32,
        messages=[{"role": "user", "content": "Is water wet? Answer yes or no."}],
        response_format={"type": "json_schema",
                         "json_schema": {"name": "answer", "schema": SCHEMA, "strict": True}})
    checks.append(verdicts.json_answer(constrained.choices[0].message.content, SCHEMA_VALUES))
    return checks


def split(mode: Mode, nodes: list[NodeProcess], max_tokens: int) -> list[Check]:
    """Split by layers over both nodes; rank 1 serves its device to the head over ggml
    RPC, on the GPU when there is one; and the split answers."""
    instance = place(nodes[0], min_nodes=2, sharding="pipeline")
    ranks = instance["ranks"]
    device_node = next((n for n in nodes if n.node_id() == ranks[-1]["node_id"]), None)
    held = None
    if mode == "cuda" and device_node is not None:
        apps = nvidia.apps()
        held = sum(apps.get(pid, 0) for pid in device_node.runner_pids())
    checks = [verdicts.split_on_two_nodes(mode, ranks, held)]
    client = openai.OpenAI(base_url=f"{nodes[0].url}/v1", api_key="unused", max_retries=0,
                           timeout=120)
    reply = client.chat.completions.create(
        model=MODEL, temperature=0, max_tokens=max_tokens,
        messages=[{"role": "user", "content": "Name a river."}])
    checks.append(verdicts.answered("chat on the split", reply.choices[0].message.content,
                                    reply.usage.completion_tokens if reply.usage else 0))
    remove(nodes[0], instance["instance_id"])
    return checks


def model_shape(gguf_path: Path) -> tuple[int, int]:
    """The model's layer count and embedding width, from its GGUF."""
    import gguf

    reader = gguf.GGUFReader(str(gguf_path))
    architecture = str(reader.fields["general.architecture"].contents())
    return (int(reader.fields[f"{architecture}.block_count"].contents()),
            int(reader.fields[f"{architecture}.embedding_length"].contents()))
