"""The KV of recently finished conversations, so a follow-up turn prefills only what is new.

Bounded by entry count and by tokens, least recently used first out. The bound is in
tokens, not in this rank's bytes, because every rank of a split model must keep and
evict exactly the same entries: tokens are the same everywhere, bytes per rank are not.
The engine turns its byte budget into tokens with the whole model's KV size per token.
"""

from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from skulk.worker.engines.mlx.mlx_api import RowKv


@dataclass(frozen=True)
class PrefixHit:
    """How many leading prompt tokens can come from `kv` instead of a prefill."""

    tokens: int
    kv: RowKv | None
    key: tuple[int, ...] = ()


class PrefixCache:
    def __init__(self, max_entries: int, max_tokens: int) -> None:
        self.max_entries = max_entries
        self.max_tokens = max_tokens
        self._entries: OrderedDict[tuple[int, ...], RowKv] = OrderedDict()
        self.hits = 0
        self.reused_tokens = 0

    @property
    def enabled(self) -> bool:
        return self.max_entries > 0 and self.max_tokens > 0

    @property
    def held_tokens(self) -> int:
        return sum(len(tokens) for tokens in self._entries)

    @property
    def nbytes(self) -> int:
        return sum(kv.nbytes for kv in self._entries.values())

    def __len__(self) -> int:
        return len(self._entries)

    def lookup(self, prompt: Sequence[int]) -> PrefixHit:
        """The longest cached prefix of `prompt`, leaving at least its last token to run
        (its logits choose the first new token). Pure: only an agreed `use` counts."""
        best, best_key = 0, None
        wanted = np.asarray(prompt[:-1], dtype=np.int64)
        for key in self._entries:
            shared = _common_prefix(np.asarray(key, dtype=np.int64), wanted)
            if shared > best:
                best, best_key = shared, key
        if best_key is None:
            return PrefixHit(0, None)
        return PrefixHit(best, self._entries[best_key], best_key)

    def use(self, hit: PrefixHit, tokens: int) -> None:
        """Mark an entry used for `tokens` tokens, once every rank agreed to: only then
        does it move in the eviction order, so that order is the same on every rank."""
        if tokens <= 0 or hit.key not in self._entries:
            return
        self._entries.move_to_end(hit.key)
        self.hits += 1
        self.reused_tokens += tokens

    def insert(self, tokens: Sequence[int], kv: RowKv) -> None:
        """Keep the KV of `tokens`; entries it extends are dropped as redundant."""
        if not self.enabled or not tokens or len(tokens) > self.max_tokens:
            return
        if kv.length != len(tokens):
            raise ValueError(f"KV holds {kv.length} tokens but {len(tokens)} were given")
        key = tuple(tokens)
        for old in [k for k in self._entries if len(k) <= len(key) and key[: len(k)] == k]:
            del self._entries[old]
        self._entries[key] = kv
        while len(self._entries) > self.max_entries or self.held_tokens > self.max_tokens:
            self._entries.popitem(last=False)


def _common_prefix(a: npt.NDArray[np.int64], b: npt.NDArray[np.int64]) -> int:
    size = min(len(a), len(b))
    differ = np.flatnonzero(a[:size] != b[:size])
    return int(differ[0]) if len(differ) else size
