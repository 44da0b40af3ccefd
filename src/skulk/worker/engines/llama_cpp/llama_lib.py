"""The typed doorway to llama-cpp-python (with `sequences_lib`, the only modules that
import it): chat templates, where layers go, and one-sequence `Llama` contexts
for embeddings.

Most of llama-cpp-python is annotated; its raw C bindings and the private parts the engine
needs are not, so they are reached here and in `sequences_lib` and nowhere else.
"""

import ctypes
from collections.abc import Generator, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from functools import cache
from typing import cast

import llama_cpp
import llama_cpp.llama_cpp
from llama_cpp import _internals
from llama_cpp.llama_chat_format import Jinja2ChatFormatter
from llama_cpp.llama_types import ChatCompletionRequestMessage

from skulk.shared.types.tasks import ChatMessage


@dataclass(frozen=True)
class RenderedPrompt:
    text: str
    added_special: bool  # the template wrote the BOS token itself


class ChatTemplate:
    """A GGUF's own chat template, rendered as llama-cpp-python's chat completion does."""

    def __init__(self, formatter: Jinja2ChatFormatter) -> None:
        self._formatter = formatter

    def render(self, messages: Sequence[ChatMessage]) -> RenderedPrompt:
        # Every role's message type has a role and a content; the template reads no more.
        plain = [{"role": message.role, "content": message.content} for message in messages]
        rendered = self._formatter(messages=cast("list[ChatCompletionRequestMessage]", plain))
        return RenderedPrompt(rendered.prompt, rendered.added_special)


def chat_template_from(model: "_internals.LlamaModel") -> ChatTemplate | None:
    """The template in a GGUF's metadata, with its BOS and EOS tokens; None if the file
    carries none."""
    template = model.metadata().get("tokenizer.chat_template")
    if template is None:
        return None
    eos_id, bos_id = model.token_eos(), model.token_bos()
    return ChatTemplate(Jinja2ChatFormatter(
        template=template,
        eos_token=model.token_get_text(eos_id) if eos_id != -1 else "",
        bos_token=model.token_get_text(bos_id) if bos_id != -1 else "",
        stop_token_ids=[eos_id]))


class LlamaContext:
    """A GGUF model loaded in one llama.cpp context of one sequence (llama-cpp-python's
    `Llama`): embeddings, and a plain greedy run to compare with."""

    def __init__(self, llama: llama_cpp.Llama) -> None:
        self._llama = llama

    @property
    def n_vocab(self) -> int:
        return self._llama.n_vocab()

    def chat_template(self) -> ChatTemplate | None:
        return chat_template_from(self._llama._model)

    def tokenize(self, text: str, *, add_bos: bool, special: bool) -> list[int]:
        return self._llama.tokenize(text.encode("utf-8"), add_bos=add_bos, special=special)

    def detokenize(self, tokens: list[int]) -> bytes:
        return self._llama.detokenize(tokens)

    def ends_generation(self, token: int) -> bool:
        """Whether the token ends a generation (EOS, end of turn, ...)."""
        return bool(llama_cpp.llama_vocab_is_eog(self._llama._model.vocab, token))

    def generate(self, prompt: list[int], *, top_k: int, top_p: float, min_p: float,
                 temperature: float, repeat_penalty: float
                 ) -> Generator[int, Sequence[int] | None, None]:
        """Sampled tokens after `prompt`, reusing the longest prefix the context holds;
        closing the generator stops it."""
        return self._llama.generate(prompt, top_k=top_k, top_p=top_p, min_p=min_p,
                                    temp=temperature, repeat_penalty=repeat_penalty)

    def embed(self, texts: list[str]) -> list[list[float]]:
        """One unit-length vector per text (a context opened with `embedding=True`)."""
        vectors: list[list[float]] = self._llama.embed(texts, normalize=True)
        return vectors


@dataclass(frozen=True)
class Offload:
    """Which layers leave the CPU: llama.cpp offloads a suffix of `layers` layers (-1: all),
    counting the output layer as one more, and divides it among its devices (remote ones
    first) in proportion to `split` (empty: by their free memory)."""

    layers: int
    split: tuple[float, ...]


def gpu_offload(gpu_layers: int, shard_layers: int) -> Offload | None:
    """A whole model's offload to this machine's GPUs: `gpu_layers` of its layers, or
    every layer and the output when that is all of them; llama.cpp divides them among the
    GPUs by their free memory. None: no GPU layers."""
    if gpu_layers <= 0:
        return None
    return Offload(layers=-1 if gpu_layers >= shard_layers else gpu_layers, split=())


def offload_for(layer_counts: list[int]) -> Offload:
    """The offload that keeps the first `layer_counts[0]` layers on this CPU and gives each
    next device exactly its count of the following layers, in order; the output layer goes
    with the last device (llama.cpp offloads it with the suffix).

    llama.cpp puts layer `i` of the suffix on the first device whose cumulative share
    exceeds `i / suffix`; whole-number shares make those bounds exact in float.
    """
    remote = layer_counts[1:]
    if not remote or any(count < 1 for count in layer_counts):
        raise ValueError(f"a split needs layers on every rank, got {layer_counts}")
    split = [float(count) for count in remote]
    split[-1] += 1  # the output layer
    return Offload(layers=sum(remote) + 1, split=tuple(split))


def open_context(model_path: str, *, context_tokens: int, threads: int | None,
                 embedding: bool = False, offload: Offload | None = None) -> LlamaContext:
    """Load a GGUF in a one-sequence `Llama`, its later layers on other devices as
    `offload` says; an embedding context mean-pools the last hidden states. Prefill uses
    as many threads as decoding (llama-cpp-python would otherwise take every core)."""
    layers = 0 if offload is None else offload.layers
    split = None if offload is None or not offload.split else list(offload.split)
    placement = _output_on_cpu() if split is not None else nullcontext()
    with placement:
        if embedding:
            return LlamaContext(llama_cpp.Llama(
                model_path=model_path, embedding=True, n_ctx=context_tokens,
                n_threads=threads, n_threads_batch=threads,
                pooling_type=llama_cpp.LLAMA_POOLING_TYPE_MEAN, verbose=False,
                n_gpu_layers=layers, tensor_split=split))
        return LlamaContext(llama_cpp.Llama(
            model_path=model_path, n_ctx=context_tokens, n_threads=threads,
            n_threads_batch=threads, verbose=False, n_gpu_layers=layers, tensor_split=split))


def model_params(offload: Offload | None) -> llama_cpp.llama_model_params:
    """llama.cpp's model parameters for this offload (None: everything on the CPU). The
    arrays they point to stay alive with them (ctypes keeps what is assigned)."""
    params: llama_cpp.llama_model_params = llama_cpp.llama_model_default_params()
    if offload is None:
        return params
    params.n_gpu_layers = 0x7FFFFFFF if offload.layers == -1 else offload.layers
    if offload.split:
        shares = (ctypes.c_float * llama_cpp.LLAMA_MAX_DEVICES)(*offload.split)
        params.tensor_split = shares
        _keep_output_on_cpu(params)
    return params


class _TensorBufferOverride(ctypes.Structure):
    """`struct llama_model_tensor_buft_override` (llama.h), which llama-cpp-python does not
    bind: tensors whose name matches `pattern` go to buffer type `buft`."""

    _fields_ = [("pattern", ctypes.c_char_p), ("buft", ctypes.c_void_p)]


# The output layer's weights, and the token embedding it shares when the model ties them.
_OUTPUT_WEIGHTS = rb"^(output|output_norm|token_embd)\.weight$"


def _keep_output_on_cpu(params: llama_cpp.llama_model_params) -> None:
    """A split model keeps its output layer on this CPU: llama.cpp would put it on the
    last remote device with the last layers, and every token's logits (the whole
    vocabulary, ~200 KB for a 49k vocabulary) would cross the network back to the head
    instead of one hidden state."""
    # The binding declares this field a c_void_p ("unused") but annotates an array.
    params.tensor_buft_overrides = ctypes.cast(  # type: ignore[assignment]
        _output_overrides(), ctypes.c_void_p)


@cache
def _output_overrides() -> ctypes.Array[_TensorBufferOverride]:
    """The override list, made once and kept for the process (llama.cpp reads it while a
    model loads)."""
    lib = llama_cpp.llama_cpp._lib
    lib.ggml_backend_cpu_buffer_type.restype = ctypes.c_void_p
    overrides = (_TensorBufferOverride * 2)()  # ends with a null pattern
    overrides[0].pattern = _OUTPUT_WEIGHTS
    overrides[0].buft = lib.ggml_backend_cpu_buffer_type()
    return overrides


@contextmanager
def _output_on_cpu() -> Iterator[None]:
    """`Llama` objects made within keep a split model's output layer on this CPU:
    llama-cpp-python sets no tensor overrides, so its default model parameters are given
    ours while the model loads."""
    defaults = llama_cpp.llama_cpp.llama_model_default_params

    def with_overrides() -> llama_cpp.llama_model_params:
        params: llama_cpp.llama_model_params = defaults()
        _keep_output_on_cpu(params)
        return params

    llama_cpp.llama_cpp.llama_model_default_params = with_overrides
    try:
        yield
    finally:
        llama_cpp.llama_cpp.llama_model_default_params = defaults
