"""A node's samples as peers read them: columns, one list per field, not a JSON object per
sample. A peer's hour is read once, on the first `/v1/history` a node answers; as columns
it is a third of the size of rows and parses as lists of numbers."""

from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from skulk.api.history.samples import (
    RING_CAPACITY,
    InstanceSample,
    NodeSample,
    RequestCounts,
)
from skulk.api.metrics import LATENCY_BUCKETS

# Instances sampled together on one node: room for a few dozen per sample.
_MAX_INSTANCE_ROWS = RING_CAPACITY * 64
_BUCKETS = len(LATENCY_BUCKETS) + 1
Buckets = list[list[int]]


class _Columns(BaseModel):
    model_config = ConfigDict(extra="forbid")

    at: list[float]
    seconds: list[float]
    tokens: list[float]
    generations: list[int]
    first_token_buckets: Buckets

    @model_validator(mode="after")
    def _one_length(self) -> "_Columns":
        lengths = {len(values) for values in vars(self).values() if isinstance(values, list)}
        if len(lengths) > 1:
            raise ValueError(f"columns of different lengths: {sorted(lengths)}")
        if any(len(row) != _BUCKETS for row in self.first_token_buckets):
            raise ValueError(f"first_token_buckets rows must have {_BUCKETS} counts")
        return self

    def counts(self) -> list[RequestCounts]:
        return [RequestCounts(tokens, generations, tuple(buckets)) for tokens, generations, buckets
                in zip(self.tokens, self.generations, self.first_token_buckets, strict=True)]


class NodeColumns(_Columns):
    """A node's samples, a column per field (see `NodeSample`)."""

    at: list[float] = Field(max_length=RING_CAPACITY)
    refused: list[int]
    queue_depth: list[int]
    cpu_percent: list[float]
    memory_used_bytes: list[int]
    memory_total_bytes: list[int]
    vram_used_bytes: list[int]
    vram_total_bytes: list[int]
    runner_restarts: list[int]

    def samples(self) -> list[NodeSample]:
        # Positional, in NodeSample's field order: a peer's hour is 720 of them.
        return [NodeSample(*row) for row in zip(
            self.at, self.seconds, self.counts(), self.refused, self.queue_depth,
            self.cpu_percent, self.memory_used_bytes, self.memory_total_bytes,
            self.vram_used_bytes, self.vram_total_bytes, self.runner_restarts, strict=True)]


class InstanceColumns(_Columns):
    """Instances' samples on one node, a column per field (see `InstanceSample`)."""

    at: list[float] = Field(max_length=_MAX_INSTANCE_ROWS)
    instance_id: list[str]
    model_id: list[str]
    queue_depth: list[int]

    def samples(self) -> list[InstanceSample]:
        return [InstanceSample(*row) for row in zip(
            self.at, self.seconds, self.instance_id, self.model_id, self.counts(),
            self.queue_depth, strict=True)]


def _request_columns(counts: Sequence[RequestCounts]) -> dict[str, list[object]]:
    return {"tokens": [c.tokens for c in counts], "generations": [c.generations for c in counts],
            "first_token_buckets": [list(c.first_token_buckets) for c in counts]}


def node_columns(samples: Sequence[NodeSample]) -> dict[str, list[object]]:
    return {"at": [s.at for s in samples], "seconds": [s.seconds for s in samples],
            **_request_columns([s.requests for s in samples]),
            "refused": [s.refused for s in samples],
            "queue_depth": [s.queue_depth for s in samples],
            "cpu_percent": [s.cpu_percent for s in samples],
            "memory_used_bytes": [s.memory_used_bytes for s in samples],
            "memory_total_bytes": [s.memory_total_bytes for s in samples],
            "vram_used_bytes": [s.vram_used_bytes for s in samples],
            "vram_total_bytes": [s.vram_total_bytes for s in samples],
            "runner_restarts": [s.runner_restarts for s in samples]}


def instance_columns(samples: Sequence[InstanceSample]) -> dict[str, list[object]]:
    return {"at": [s.at for s in samples], "seconds": [s.seconds for s in samples],
            **_request_columns([s.requests for s in samples]),
            "instance_id": [s.instance_id for s in samples],
            "model_id": [s.model_id for s in samples],
            "queue_depth": [s.queue_depth for s in samples]}


def read_samples(answer: object) -> tuple[list[NodeSample], list[InstanceSample]]:
    """A peer's node and instance samples; raises `ValueError` when it sent no such thing."""
    if not isinstance(answer, dict):
        raise ValueError("not an object")
    try:
        nodes = NodeColumns.model_validate(answer.get("nodes"))
        instances = InstanceColumns.model_validate(answer.get("instances"))
    except ValidationError as error:
        raise ValueError(str(error)) from error
    return nodes.samples(), instances.samples()
