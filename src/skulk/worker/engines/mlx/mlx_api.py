"""The engine's one typed doorway to mlx-lm: the only module under worker/ that imports it
(the offline importer, which must not depend on the worker, keeps its own in
`models/mlx_import/mlx_arrays.py`).

It loads models and tokenizers, tokenizes and detokenizes, does the KV-cache surgery the
generation loop asks for (merge rows, drop rows, copy one row out, seed one from a saved
prefix), and builds mlx-lm's own model classes and masks for the sharded families.
Most of mlx-lm's functions carry no annotations, so they are reached through `Any` here
and nowhere else.
"""

import importlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import mlx.core as mx

from skulk.worker.engines.utf8_text import without_incomplete_tail

_utils: Any = importlib.import_module("mlx_lm.utils")
_cache: Any = importlib.import_module("mlx_lm.models.cache")
_base: Any = importlib.import_module("mlx_lm.models.base")

# mlx-lm's BatchKVCache.state: keys, values, offsets, left padding, positions held.
_BatchState = tuple[mx.array | None, mx.array | None, mx.array, mx.array, int]


class _RowCache(Protocol):
    """mlx-lm's KVCache of one sequence, copied out of a batch."""

    keys: mx.array
    values: mx.array
    offset: int


class LayerCache(Protocol):
    """mlx-lm's BatchKVCache of one layer, as far as Skulk uses it; only this module
    calls it."""

    keys: mx.array | None
    offset: mx.array

    @property
    def state(self) -> _BatchState: ...
    @state.setter
    def state(self, value: _BatchState) -> None: ...
    def extract(self, idx: int) -> _RowCache: ...
    def filter(self, batch_indices: mx.array) -> None: ...
    def extend(self, other: "LayerCache") -> None: ...
    def size(self) -> int: ...
    def trim(self, n: int) -> int: ...


@dataclass(frozen=True)
class ModelShape:
    """What the engine needs to know of a model's architecture, read from config.json."""

    n_layers: int
    hidden_size: int
    n_kv_heads: int
    head_dim: int
    vocab_size: int
    bytes_per_value: int

    @property
    def kv_bytes_per_token(self) -> int:
        """KV bytes one token costs across all layers of the whole model."""
        return self.n_layers * 2 * self.n_kv_heads * self.head_dim * self.bytes_per_value


def read_model_shape(model_dir: Path) -> ModelShape:
    """The architecture figures of an mlx-lm model directory."""
    config = json.loads((model_dir / "config.json").read_text())
    heads = int(config["num_attention_heads"])
    hidden = int(config["hidden_size"])
    dtype = str(config.get("torch_dtype", "float32"))
    return ModelShape(
        n_layers=int(config["num_hidden_layers"]), hidden_size=hidden,
        n_kv_heads=int(config.get("num_key_value_heads") or heads),
        head_dim=int(config.get("head_dim") or hidden // heads),
        vocab_size=int(config["vocab_size"]),
        bytes_per_value=2 if dtype in ("float16", "bfloat16") else 4)


class LanguageModel:
    """A whole mlx-lm causal language model: tokens and per-layer caches in, logits out."""

    def __init__(self, module: Any) -> None:
        self._module = module

    @property
    def n_layers(self) -> int:
        return len(self._module.layers)

    def __call__(self, tokens: mx.array, cache: list[LayerCache]) -> mx.array:
        """Logits [B, T, V] (lazy) for tokens [B, T]; appends their KV to `cache`."""
        logits: mx.array = self._module(tokens, cache=cache)
        return logits

    def mean_pooled(self, tokens: list[int]) -> list[float] | None:
        """The unit-length mean of the last hidden states (after the final norm) over
        `tokens`, as llama.cpp pools a decoder's embeddings; None for a model class with
        no inner model to read them from."""
        inner = getattr(self._module, "model", None)
        if inner is None:
            return None
        hidden: mx.array = inner(mx.array([tokens], dtype=mx.int32))
        return unit_mean(hidden[0])


def unit_mean(hidden: mx.array) -> list[float]:
    """The unit-length mean over positions of hidden states [T, H] (in float32)."""
    mean = hidden.astype(mx.float32).mean(axis=0)
    unit = mean / mx.maximum(mx.linalg.norm(mean), mx.array(1e-12))
    vector: list[float] = unit.tolist()  # type: ignore[assignment]
    return vector


def load_model(model_dir: Path) -> LanguageModel:
    """Load weights eagerly, so the first request does not pay for reading them."""
    module, _config = _utils.load_model(model_dir, lazy=False)
    return LanguageModel(module)


class Detokenizer:
    """Streaming detokenizer of one request: never splits a multi-byte character."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def add(self, token: int) -> str:
        """Feed one token; the text that became printable."""
        self._inner.add_token(token)
        segment: str = self._inner.last_segment
        return segment

    def finish(self) -> str:
        """Whatever was held back (a trailing space), less a character the answer ended
        inside: mlx-lm decodes that as U+FFFD."""
        self._inner.finalize()
        segment: str = self._inner.last_segment
        return without_incomplete_tail(segment)


class Tokenizer:
    """A Hugging Face tokenizer (tokenizer.json, tokenizer_config.json) with typed calls."""

    def __init__(self, wrapper: Any) -> None:
        self._wrapper = wrapper

    @property
    def eos_token_ids(self) -> frozenset[int]:
        return frozenset(int(t) for t in self._wrapper.eos_token_ids)

    @property
    def has_chat_template(self) -> bool:
        return bool(self._wrapper.has_chat_template)

    def render_chat(self, messages: Sequence[dict[str, str]]) -> str:
        """The conversation rendered by the model's own chat template, ready to answer."""
        rendered: str = self._wrapper.apply_chat_template(
            list(messages), tokenize=False, add_generation_prompt=True)
        return rendered

    def encode(self, text: str, *, add_special_tokens: bool) -> list[int]:
        return [int(t) for t in self._wrapper.encode(text, add_special_tokens=add_special_tokens)]

    def decode(self, tokens: Sequence[int]) -> str:
        text: str = self._wrapper.decode(list(tokens))
        return text

    def detokenizer(self, after: Sequence[int] = ()) -> Detokenizer:
        """A fresh detokenizer; `after`: tokens the text goes on from (a continuation), so
        the first new token keeps its leading space instead of starting a text."""
        inner = self._wrapper.detokenizer
        inner.reset()
        if after:
            inner.add_token(after[-1])
            if inner.last_segment == "":  # an incomplete character: start clean instead
                inner.reset()
        return Detokenizer(inner)


def load_tokenizer(model_dir: Path) -> Tokenizer:
    config = json.loads((model_dir / "config.json").read_text())
    wrapper = _utils.load_tokenizer(model_dir, eos_token_ids=config.get("eos_token_id"))
    return Tokenizer(wrapper)


def make_batch_cache(n_layers: int, left_padding: list[int]) -> list[LayerCache]:
    """One empty left-padded batch cache per layer."""
    caches: list[LayerCache] = [_cache.BatchKVCache(list(left_padding))
                                for _ in range(n_layers)]
    return caches


@dataclass(frozen=True)
class RowKv:
    """One sequence's keys and values, per layer: arrays [1, kv_heads, tokens, head_dim]."""

    layers: tuple[tuple[mx.array, mx.array], ...]
    length: int

    @property
    def nbytes(self) -> int:
        return sum(k.nbytes + v.nbytes for k, v in self.layers)


def extract_row(cache: list[LayerCache], row: int) -> RowKv:
    """Copy one row of a batch cache out, without its padding, evaluated."""
    layers = []
    for layer in cache:
        single = layer.extract(row)
        size = single.offset
        layers.append((single.keys[..., :size, :], single.values[..., :size, :]))
    mx.eval([a for pair in layers for a in pair])
    length = int(layers[0][0].shape[2]) if layers else 0
    return RowKv(layers=tuple(layers), length=length)


def seed_row(cache: list[LayerCache], saved: RowKv, length: int) -> None:
    """Fill an empty one-row batch cache with the first `length` tokens of `saved`."""
    if length == 0:
        return
    for layer, (keys, values) in zip(cache, saved.layers, strict=True):
        if layer.keys is not None or int(layer.offset.shape[0]) != 1:
            raise ValueError("only an empty one-row cache can be seeded")
        layer.state = (keys[..., :length, :], values[..., :length, :], mx.array([length]),
                       mx.array([0]), length)


def keep_rows(cache: list[LayerCache], rows: list[int]) -> None:
    """Drop every row of a batch cache but `rows` (in this order), in place."""
    index = mx.array(rows, dtype=mx.int32)
    for layer in cache:
        layer.filter(index)


def append_rows(cache: list[LayerCache], other: list[LayerCache]) -> None:
    """Append the rows of `other` after those of `cache`, in place."""
    for layer, extra in zip(cache, other, strict=True):
        layer.extend(extra)


def cache_tokens(cache: list[LayerCache]) -> int:
    """Positions held per row, padding included (0 for a cache without layers)."""
    return int(cache[0].size()) if cache else 0


def start_evaluating(array: mx.array) -> None:
    """Evaluate `array` in the background; the caller goes on (and waits when it reads)."""
    mx.async_eval(array)  # type: ignore[no-untyped-call]


def evaluate_cache(cache: list[LayerCache]) -> None:
    """Run the lazy graph that fills the cache (and only that: logits stay unevaluated)."""
    mx.eval([layer.state for layer in cache])


def trim_cache(cache: list[LayerCache], tokens: int) -> None:
    """Drop the last `tokens` positions of every row (a rejected draft's KV), in place.
    What remains is exactly the cache of the tokens before them."""
    if tokens <= 0:
        return
    for layer in cache:
        trimmed = int(layer.trim(tokens))
        if trimmed != tokens:
            raise ValueError(f"could trim only {trimmed} of {tokens} cached positions")


def attention_mask(hidden: mx.array, first_cache: LayerCache, window_size: int | None = None
                   ) -> mx.array | str | None:
    """The mask mlx-lm's models build for hidden states [B, T, D] over this cache (limited
    to the last `window_size` positions for a sliding-window layer): an array, "causal",
    or None for one token."""
    mask: mx.array | str | None = _base.create_attention_mask(
        hidden, first_cache, window_size=window_size)
    return mask


def checkpoint_quantization(path: str, module: object,
                            weights: dict[str, mx.array]) -> dict[str, Any]:
    """The group size, bits and mode a stored weight was quantized with, read off the
    shapes of its tensors (for a still unquantized `module` at `path`)."""
    settings: dict[str, Any] = _utils.infer_quant_config(path, module, weights)
    return settings




def new_model(config: dict[str, Any]) -> Any:
    """mlx-lm's own model class of this config.json (its `model_type`, remapped as mlx-lm
    remaps it: `mistral` is a Llama), with lazily initialised random weights."""
    model_class, args_class = _utils._get_classes(config=config)
    return model_class(args_class.from_dict(config))


def has_model_code(model_type: str) -> bool:
    """mlx-lm has an implementation of this `model_type`."""
    try:
        _utils._get_classes(config={"model_type": model_type})
    except ValueError:
        return False
    return True


def load_lazily(model_dir: Path) -> Any:
    """A whole mlx-lm model of any family whose weights are read only when evaluated."""
    return _utils.load_model(model_dir, lazy=True)[0]


def quantize(model: Any, *, group_size: int, bits: int) -> None:
    """Quantize every quantizable layer of an mlx-lm model in place (for test models)."""
    nn: Any = importlib.import_module("mlx.nn")
    nn.quantize(model, group_size=group_size, bits=bits)
