"""A smaller model sharing the target's tokenizer drafts greedily from its own KV cache.

The session keeps the tokens its cache holds; each round it trims back to what the new
context shares with them (the rejected tail of its last draft), feeds what is new and
decodes `limit` tokens one at a time. To bound the catch-up cost on a long prompt it
drafts from a window of the most recent context only (`window` tokens, rebuilt when the
held context has grown to twice that): a shorter context lowers acceptance, never
correctness.
"""

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

import mlx.core as mx

from skulk.shared.types.traces import Span
from skulk.worker.engines.mlx import mlx_api
from skulk.worker.engines.mlx.drafters.protocol import EMPTY_DRAFT, Draft, DrafterName

DEFAULT_WINDOW = 128
_PREFILL_CHUNK = 256


def _common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    size = min(len(a), len(b))
    for index in range(size):
        if a[index] != b[index]:
            return index
    return size


@dataclass
class DraftModelSession:
    model: mlx_api.LanguageModel
    window: int = DEFAULT_WINDOW
    _cache: list[mlx_api.LayerCache] = field(default_factory=list)
    _held: list[int] = field(default_factory=list)  # tokens whose KV the cache holds
    _anchor: int = 0  # position in the context where the held tokens start

    def __post_init__(self) -> None:
        self._restart(0)

    def propose(self, context: Sequence[int], limit: int) -> Draft:
        if limit <= 0 or not context:
            return EMPTY_DRAFT
        if len(context) - self._anchor > 2 * self.window or len(context) < self._anchor:
            self._restart(max(0, len(context) - self.window))
        visible = list(context[self._anchor:])
        keep = _common_prefix(self._held, visible[:-1])
        mlx_api.trim_cache(self._cache, len(self._held) - keep)
        self._held = self._held[:keep]
        for start in range(keep, len(visible) - 1, _PREFILL_CHUNK):
            piece = visible[start: min(start + _PREFILL_CHUNK, len(visible) - 1)]
            self.model(mx.array([piece], dtype=mx.int32), self._cache)
            mlx_api.evaluate_cache(self._cache)
            self._held.extend(piece)
        tokens: list[int] = []
        last = visible[-1]
        for _ in range(limit):
            logits = self.model(mx.array([[last]], dtype=mx.int32), self._cache)
            self._held.append(last)
            last = int(cast(int, mx.argmax(logits[0, -1]).item()))
            tokens.append(last)
        return Draft(tuple(tokens))

    def close(self) -> tuple[Span, ...]:
        self._cache, self._held = [], []
        return ()

    def _restart(self, anchor: int) -> None:
        self._anchor = anchor
        self._cache = mlx_api.make_batch_cache(self.model.n_layers, [0])
        self._held = []


@dataclass(frozen=True)
class DraftModelDrafter:
    """One loaded draft model, a session (its own cache) per request."""

    model: mlx_api.LanguageModel
    window: int = DEFAULT_WINDOW

    @property
    def name(self) -> DrafterName:
        return "draft_model"

    def open(self, request_id: str) -> DraftModelSession:
        return DraftModelSession(self.model, self.window)

    def seconds_per_token(self, steps: int = 4) -> float:
        """What drafting one token costs on this machine, timed over `steps` tokens after
        a warm-up: known before the first request, so a draft model slower than its
        target is never tried (a first request would otherwise pay for finding out)."""
        session = self.open("calibration")
        context = list(range(1, 9))
        session.propose(context, steps)  # allocates the cache, warms the kernels
        started = time.perf_counter()
        session.propose(context, steps)  # the context is held: only the drafting steps
        seconds = (time.perf_counter() - started) / steps
        session.close()
        return seconds


def load_draft_model_drafter(model_dir: Path, window: int = DEFAULT_WINDOW
                             ) -> DraftModelDrafter:
    if not (model_dir / "config.json").exists():
        raise ValueError(f"draft model {model_dir} is not an MLX model directory")
    return DraftModelDrafter(mlx_api.load_model(model_dir), window)
