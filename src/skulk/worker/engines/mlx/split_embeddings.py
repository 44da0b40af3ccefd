"""Embeddings of a split MLX instance, computed by every rank in step.

An embedding request joins the batch like any other (the ranks agree on it at the same
step), and then, instead of prefilling, every rank runs each text through its part of
the model at once, on a cache of its own: a pipeline's ranks pass the hidden states on as
for a prompt, and its last rank, which holds the final norm, pools them and sends rank 0
the vector over the ring's closing link; a split by heads ends with the same hidden
states on every rank, and rank 0 pools its own. The pooling is a whole model's
(`mlx_api.unit_mean`: the unit-length mean of the final-normed hidden states).
"""

from typing import Protocol, runtime_checkable

import mlx.core as mx

from skulk.shared.types.chunks import ErrorChunk
from skulk.worker.engines.embedding_events import embedded
from skulk.worker.engines.mlx import mlx_api
from skulk.worker.engines.mlx.corruption_guard import GuardedShard
from skulk.worker.engines.mlx.requests import Request
from skulk.worker.engines.mlx.shard import ModelShard
from skulk.worker.engines.protocol import EngineEvent, TaskDone, TaskJoined, TaskOutput


@runtime_checkable
class HiddenStates(Protocol):
    """A shard that can hand out its final-normed hidden states (families/*.py)."""

    def final_hidden(self, tokens: mx.array,
                     cache: list[mlx_api.LayerCache]) -> mx.array | None:
        """Hidden states [B, T, H] after the final norm where this rank holds them (a
        pipeline's last rank, every rank of a split by heads), None elsewhere."""
        ...


def _inner(shard: ModelShard) -> ModelShard:
    return shard.inner if isinstance(shard, GuardedShard) else shard


def embed_on_every_rank(shard: ModelShard, texts: list[list[int]],
                        hidden_size: int) -> list[list[float]] | None:
    """Each text's vector on rank 0 (None on the other ranks); every rank calls it at
    the same point with the same token lists."""
    inner = _inner(shard)
    assert isinstance(inner, HiddenStates), "embedding_answer checks it first"
    group = shard.group
    vectors: list[list[float]] = []
    for tokens in texts:
        hidden = inner.final_hidden(mx.array([tokens], dtype=mx.int32), shard.make_cache([0]))
        if group.rank == 0 and hidden is not None:
            vectors.append(mlx_api.unit_mean(hidden[0]))
        elif group.rank != 0 and shard.decides and hidden is not None:
            pooled = mx.array(mlx_api.unit_mean(hidden[0]), dtype=mx.float32)
            group.send(pooled, 0)
        elif group.rank == 0:
            received = group.recv((hidden_size,), mx.float32, group.size - 1)
            vectors.append(received.tolist())  # type: ignore[arg-type]
    return vectors if group.rank == 0 else None


def embedding_answer(shard: ModelShard, request: Request,
                     hidden_size: int) -> list[EngineEvent]:
    """This rank's events for an embedding request that every rank admitted at this step:
    joined, rank 0's chunk with the vectors, done (every rank shares the shard's kind, so
    a kind that cannot embed fails the request the same way on every rank)."""
    assert request.embed is not None
    task_id, emits = request.task_id, shard.group.rank == 0
    inner = _inner(shard)
    if not isinstance(inner, HiddenStates):
        message = f"this model's MLX shard ({type(inner).__name__}) exposes no hidden states"
        chunk = ErrorChunk(error_kind="invalid_request", message=message)
        return [*([TaskOutput(task_id, chunk)] if emits else []),
                TaskDone(task_id, "failed", message)]
    vectors = embed_on_every_rank(shard, request.embed, hidden_size)
    answer = ([TaskOutput(task_id, embedded(vectors, len(request.prompt)))]
              if vectors is not None else [])
    return [TaskJoined(task_id), *answer, TaskDone(task_id, "complete")]
