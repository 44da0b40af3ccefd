"""The output head of a tensor split, split by vocabulary rows.

Unsplit, the deciding rank applies the whole head while the other ranks wait: on a small
model the head is a large share of the weights (Llama-3.2-1B's shape with a 49k
vocabulary: 100M of 1.07B parameters), so a split by heads cannot approach twice one node
while one rank reads all of it. Split, every rank applies the head rows of its slice of
the vocabulary (the same family code, `Plain.logits`, on a view of the model whose head
holds only those rows: a tied embedding keeps all its rows for the lookup) and one
all_gather in the head's dtype joins the slices, so every rank holds the whole logits.

The gather carries rows x vocabulary values, so it pays only for few rows: a decode step
of a small batch. Which forwards use it is decided from the token shape alone, the same
on every rank (every rank must make the same collectives).
"""

import copy
from typing import Any

import mlx.core as mx

from skulk.model_families.quirks import Plain

HEAD_SPLIT_MAX_ROWS = 4
"""Batch rows x positions up to which the head is split. Past it the gathered logits
(4 bytes x 49k x rows in fp32: 200 KB per row) cost more on a 1 Gbit link than the half
of the head each rank no longer reads."""

_ROW_PARAMETERS = ("weight", "scales", "biases", "bias")


def _rows(module: Any, start: int, end: int) -> Any:
    """A copy of an Embedding or Linear (plain or quantized) with rows [start, end) of its
    weight (and of its scales, biases and bias): views of the same memory."""
    sliced = copy.copy(module)
    for name in _ROW_PARAMETERS:
        if name in module:
            sliced[name] = module[name][start:end]
    return sliced


def _vocab_size(model: Any) -> int:
    head = model.lm_head if "lm_head" in model else model.model.embed_tokens
    rows: int = head.weight.shape[0]
    return rows


class VocabSplitHead:
    """This rank's slice of the output head, and the gather that joins the slices."""

    def __init__(self, model: Any, quirks: Plain, group: mx.distributed.Group) -> None:
        self.group = group
        self.quirks = quirks
        size, rank = group.size(), group.rank()
        vocab = _vocab_size(model)
        self.slice_rows = vocab // size
        start, end = rank * self.slice_rows, (rank + 1) * self.slice_rows
        # A shallow copy of the model whose head (lm_head, or the tied embedding the
        # family's `logits` reads) holds only this rank's rows; the layers are shared.
        view = copy.copy(model)
        if "lm_head" in model:
            view.lm_head = _rows(model.lm_head, start, end)
        else:
            view.model = copy.copy(model.model)
            view.model.embed_tokens = _rows(model.model.embed_tokens, start, end)
        self._view = view

    @staticmethod
    def splits(model: Any, size: int) -> bool:
        """Whether the vocabulary divides over `size` ranks (the gather needs equal
        slices)."""
        return _vocab_size(model) % size == 0

    @staticmethod
    def applies(tokens: mx.array) -> bool:
        """Whether a forward of these tokens [B, T] splits its head (the same answer on
        every rank)."""
        batch, length = tokens.shape
        return bool(batch * length <= HEAD_SPLIT_MAX_ROWS)

    def __call__(self, normed: mx.array) -> mx.array:
        """The whole logits [B, T, V] from final-normed hidden states [B, T, D], on every
        rank (lazy: evaluating them runs the gather)."""
        part = self.quirks.logits(self._view, normed)
        batch, length, width = part.shape
        size = self.group.size()
        gathered = mx.distributed.all_gather(part, group=self.group)
        return (gathered.reshape(size, batch, length, width).transpose(1, 2, 0, 3)
                .reshape(batch, length, size * width))
