"""The MLX engine's options, typed. Nothing here imports mlx: the node process reads them
too (the runner's environment depends on `openblas`)."""

from pathlib import Path
from typing import Literal

from pydantic import Field

from skulk.fitting.engines import MLX_FIT
from skulk.worker.engines.options import CommaSeparated, EngineOptions

DEFAULT_MAX_DRAFT = 16
DEFAULT_REMOTE_DRAFT_TIMEOUT_MS = 100.0


class MlxOptions(EngineOptions):
    """Batching, the prefix cache, the ring and speculative decoding."""

    openblas: Literal["auto", "off"] = "auto"
    """`off`: keep the wheel's reference BLAS even where Debian's OpenBLAS is installed."""
    max_batch: int = Field(default=MLX_FIT.default_batch, ge=1)
    """Requests decoded together."""
    prefill_chunk: int = Field(default=256, ge=1)
    """Prompt tokens prefilled per step."""
    prefix_cache_entries: int = Field(default=8, ge=0)
    """Prompt prefixes whose KV is kept for reuse."""
    prefix_cache_mb: float = Field(default=256, ge=0)
    """The prefix cache's budget, in MB of the whole model's KV; 0 turns it off."""
    join_wait_seconds: float = Field(default=60, gt=0)
    """How long a split instance's ranks wait for each other to take up a request."""
    idle_step_seconds: float = Field(default=0.25, gt=0)
    """How often a split instance's ranks step without work."""
    ring_connect_seconds: float = Field(default=60, gt=0)
    """How long the ranks of a split instance try to wire their ring."""
    pipeline_micro_batches: bool = False
    """On: a split by layers decodes its batch as one micro-batch per rank and, between
    membership changes, in overlapped runs (each rank on a different micro-batch, tokens
    back to rank 0 over the ring, no per-step collective); off: one pass per step."""
    speculation: bool = True
    """Off: no drafting rounds at all."""
    draft_adaptive: bool = True
    """Off: always draft `max_draft` tokens (for measurements)."""
    drafter: Literal["ngram", "draft_model", "remote", "none"] = "ngram"
    """The drafter of requests that do not choose; `none`: they decode plainly."""
    max_draft: int = Field(default=DEFAULT_MAX_DRAFT, ge=0)
    """Tokens drafted per round for requests that do not choose."""
    draft_model_path: Path | None = None
    """An MLX model directory sharing the target's tokenizer (enables `draft_model`)."""
    drafter_key: str | None = None
    """Where the drafting node answers (with `cluster_connect`, enables `remote`)."""
    cluster_connect: CommaSeparated = Field(default_factory=list)
    """This node's transport endpoints, which the runner dials to reach the drafter."""
    cluster_data_dir: Path | None = None
    """On a secure cluster: the node data directory whose certificate opens the link."""
    remote_draft_timeout_ms: float = Field(default=DEFAULT_REMOTE_DRAFT_TIMEOUT_MS, gt=0)
    """How long a round waits for the drafting node's answer."""

    def batch_size(self) -> int:
        return self.max_batch if self.batching else 1
