"""Tensor parallelism: every rank holds every layer, split by heads and MLP rows.

mlx-lm's own `shard` (or, for families whose model has none, the same split in
head_split.py) splits q/k/v and gate/up by output rows and o/down by input columns, with
an all-reduce after each: two per layer, in the model's dtype, inside one evaluated graph
(no Python between them). The embedding stays whole, so after the last all-reduce every
rank holds the same hidden states; the head is split by vocabulary rows for a decode step
(vocab_head.py) and whole on rank 0 otherwise, and rank 0 decides. A family whose mlx-lm
model mishandles a batch's mask (Gemma 2) runs its layers as a pipeline stage does, with
its quirks. Which families split this way is each family's `splits`
(`skulk/model_families/`).
"""

from pathlib import Path
from typing import Any

import mlx.core as mx

from skulk.model_families.quirks import Plain
from skulk.worker.engines.mlx import mlx_api
from skulk.worker.engines.mlx.collectives import Group, RingGroup
from skulk.worker.engines.mlx.families.head_split import split_by_heads
from skulk.worker.engines.mlx.families.stage import Stage
from skulk.worker.engines.mlx.families.stage_spec import StageSpec
from skulk.worker.engines.mlx.families.vocab_head import VocabSplitHead


def tensor_split_error(config: dict[str, Any], size: int) -> str | None:
    """Why this model's heads and MLP cannot be split over `size` ranks, or None."""
    heads = int(config["num_attention_heads"])
    kv_heads = int(config.get("num_key_value_heads") or heads)
    hidden = int(config["hidden_size"])
    head_dim = int(config.get("head_dim") or hidden // heads)
    intermediate = int(config["intermediate_size"])
    if heads % size or kv_heads % size:
        return (f"{heads} query heads and {kv_heads} KV heads do not divide over {size} "
                f"ranks; use a divisor of {kv_heads} or a pipeline split")
    if intermediate % size:
        return f"the MLP width {intermediate} does not divide over {size} ranks"
    quantization = config.get("quantization")
    if quantization is not None:
        group_size = int(quantization["group_size"])
        # o_proj and down_proj are split along their quantized input dimension.
        for name, width in (("attention output", heads * head_dim // size),
                            ("MLP output", intermediate // size)):
            if width % group_size:
                return (f"the {name} slice of {width} columns per rank is not a multiple "
                        f"of the quantization group size {group_size}")
    return None


class TensorShard:
    """One rank of a tensor-parallel model (a ModelShard)."""

    def __init__(self, model: Any, quirks: Plain, group: RingGroup,
                 head: VocabSplitHead | None = None, stage: Stage | None = None) -> None:
        self.model = model
        self.quirks = quirks
        self.group: Group = group
        self._ring = group
        self._head = head
        self._stage = stage
        self.n_layers_here = len(model.model.layers)

    @property
    def decides(self) -> bool:
        return self.group.rank == 0

    def make_cache(self, batch_left_padding: list[int]) -> list[mlx_api.LayerCache]:
        return mlx_api.make_batch_cache(self.n_layers_here, batch_left_padding)

    def forward(self, tokens: mx.array, cache: list[mlx_api.LayerCache]) -> mx.array | None:
        hidden = self._final_hidden(tokens, cache)
        # Every rank must run every collective, so the forward is evaluated here on all
        # ranks (under the deadline) whatever the caller then does with the logits.
        if self._head is not None and self._head.applies(tokens):
            logits = self._head(hidden)
            self._ring.evaluate("tensor-parallel forward", logits)
            return logits.astype(mx.float32) if self.decides else None
        self._ring.evaluate("tensor-parallel forward", hidden)
        if not self.decides:
            return None
        return self.quirks.logits(self.model, hidden).astype(mx.float32)

    def final_hidden(self, tokens: mx.array,
                     cache: list[mlx_api.LayerCache]) -> mx.array | None:
        """The final-normed hidden states, the same on every rank (embeddings pool them)."""
        hidden = self._final_hidden(tokens, cache)
        self._ring.evaluate("tensor-parallel forward", hidden)
        return hidden

    def _final_hidden(self, tokens: mx.array, cache: list[mlx_api.LayerCache]) -> mx.array:
        """Embedding, every (split) layer, final norm: mlx-lm's inner model, or the
        family's stage where mlx-lm's model is not run whole."""
        if self._stage is None:
            hidden: mx.array = self.model.model(tokens, cache)
            return hidden
        normed: mx.array = self.model.model.norm(
            self._stage.run_layers(self._stage.embed(tokens), cache))
        return normed


def load_tensor(model_dir: Path, config: dict[str, Any], group: Group,
                quirks: Plain) -> TensorShard:
    """This rank's share of every layer: load lazily, split over the group, then read
    only the slices this rank keeps."""
    if not isinstance(group, RingGroup):
        raise ValueError("a tensor split needs a ring group (connect_ring): mlx-lm's split "
                         "layers all-reduce over the mlx group itself")
    error = tensor_split_error(config, group.size)
    if error is not None:
        raise ValueError(f"cannot split {model_dir.name} by heads: {error}")
    model = mlx_api.load_lazily(model_dir)
    if hasattr(model, "shard"):
        model.shard(group.native)
    else:
        split_by_heads(model, group.native)
    mx.eval(model.parameters())
    head = (VocabSplitHead(model, quirks, group.native)
            if VocabSplitHead.splits(model, group.size) else None)
    n_layers = len(model.model.layers)
    stage = None if quirks.whole_model_is_mlx_lm else Stage(
        model, StageSpec(start_layer=0, end_layer=n_layers, embeds=True, heads=True), quirks)
    return TensorShard(model, quirks, group, head, stage)
