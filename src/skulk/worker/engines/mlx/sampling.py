"""Choosing each request's next token from its row of logits.

Every request carries its own random generator, seeded from its `seed`, so a seeded
request samples the same tokens whether it runs alone or beside others. The truncation
order follows llama.cpp's default chain (top-k, top-p, min-p on the model distribution,
then temperature), and so do the defaults, so the two engines sample alike.
"""

import random
from dataclasses import dataclass, field

import mlx.core as mx
import numpy as np
import numpy.typing as npt

# llama-cpp-python's chat-completion defaults (see the llama_cpp engine).
DEFAULT_TOP_K = 40
DEFAULT_MIN_P = 0.05


@dataclass
class RowSampler:
    """The sampler of one request."""

    temperature: float
    top_p: float = 1.0
    top_k: int | None = None
    min_p: float = DEFAULT_MIN_P
    seed: int | None = None
    _generator: np.random.Generator = field(init=False, repr=False)

    def __post_init__(self) -> None:
        seed = self.seed if self.seed is not None else random.getrandbits(63)
        self._generator = np.random.default_rng(seed)

    @property
    def greedy(self) -> bool:
        return self.temperature <= 0.0

    @property
    def generator(self) -> np.random.Generator:
        """The request's own random stream (speculative acceptance draws from it too)."""
        return self._generator

    def distribution(self, logits: npt.NDArray[np.float32]) -> npt.NDArray[np.float64]:
        """The distribution `sample` draws from, over the whole vocabulary: the same
        truncation chain and temperature, with zeros outside the kept candidates."""
        scores = logits.astype(np.float64)
        candidates = self._candidates(scores)
        full = np.zeros(len(scores), dtype=np.float64)
        full[candidates] = _softmax(scores[candidates] / self.temperature)
        return full

    def _candidates(self, scores: npt.NDArray[np.float64]) -> npt.NDArray[np.intp]:
        top_k = self.top_k or DEFAULT_TOP_K
        candidates = np.argsort(-scores, kind="stable")[: max(top_k, 1)]
        probabilities = _softmax(scores[candidates])
        if self.top_p < 1.0:
            mass = np.cumsum(probabilities)
            keep = int(np.searchsorted(mass, self.top_p)) + 1
            candidates, probabilities = candidates[:keep], probabilities[:keep]
        if self.min_p > 0.0:
            candidates = candidates[probabilities >= self.min_p * probabilities[0]]
        return candidates

    def sample(self, logits: npt.NDArray[np.float32]) -> int:
        """One token from one row of logits [V]."""
        scores = logits.astype(np.float64)
        candidates = self._candidates(scores)
        final = _softmax(scores[candidates] / self.temperature)
        return int(candidates[self._generator.choice(len(candidates), p=final)])


def _softmax(scores: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    shifted = np.exp(scores - scores.max())
    result: npt.NDArray[np.float64] = shifted / shifted.sum()
    return result


def sample_rows(logits: mx.array, samplers: list[RowSampler]) -> list[int]:
    """The next token of every row of logits [B, V]; greedy rows share one argmax."""
    chosen: list[int] = mx.argmax(logits, axis=-1).tolist()  # type: ignore[assignment]
    for row, sampler in enumerate(samplers):
        if not sampler.greedy:
            chosen[row] = sampler.sample(np.array(logits[row], dtype=np.float32))
    return chosen
