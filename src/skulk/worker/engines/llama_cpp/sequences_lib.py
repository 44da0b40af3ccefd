"""The typed doorway to llama.cpp's multi-sequence API (with `llama_lib`, the only modules
that import llama-cpp-python).

One model, one context holding several sequences in a unified KV cache, one batch buffer
that carries tokens of any sequences at once, and one sampler chain per sequence. This is
llama.cpp's own C API through llama-cpp-python's bindings, not its `Llama` class, which
decodes a single sequence.
"""

import ctypes
import warnings
from collections.abc import Callable

import llama_cpp
import llama_cpp.llama_cpp
import llguidance
import numpy as np
import numpy.typing as npt
from llama_cpp import _internals, _logger
from llguidance.llamacpp import lltokenizer_from_vocab

from skulk._native import greedy_token
from skulk.worker.engines.grammar.vocabulary import Vocabulary
from skulk.worker.engines.llama_cpp.batch_plan import BatchEntry
from skulk.worker.engines.llama_cpp.llama_lib import (
    ChatTemplate,
    Offload,
    chat_template_from,
    model_params,
)

KvBytes = ctypes.Array[ctypes.c_uint8]

# `llama_get_logits_ith` declared to return the row's address as an int (None for NULL),
# so that no pointer object is made and cast per token.
_logits_address: Callable[[object, int], int | None] = ctypes.CFUNCTYPE(
    ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int32)(
        ctypes.cast(llama_cpp.llama_cpp._lib.llama_get_logits_ith, ctypes.c_void_p).value or 0)


class SequenceModel:
    """A GGUF's weights and vocabulary, loaded once for any number of contexts."""

    def __init__(self, model_path: str, offload: Offload | None) -> None:
        _logger.set_verbose(False)  # llama.cpp logs every load at INFO otherwise
        self._model = _internals.LlamaModel(path_model=model_path,
                                            params=model_params(offload), verbose=False)
        self.n_vocab: int = self._model.n_vocab()
        # Each generated token's text and whether it ends a generation, asked once per
        # token and step: a dictionary lookup, where each ctypes call runs with caches
        # cold after the compute (a token's text alone is context-free).
        self._pieces: dict[int, bytes] = {}
        self._ends: dict[int, bool] = {}

    def chat_template(self) -> ChatTemplate | None:
        return chat_template_from(self._model)

    def tokenize(self, text: str, *, add_bos: bool, special: bool) -> list[int]:
        tokens: list[int] = self._model.tokenize(text.encode("utf-8"), add_bos, special)
        return tokens

    def detokenize(self, tokens: list[int]) -> bytes:
        piece: bytes = self._model.detokenize(tokens)
        return piece

    def piece(self, token: int) -> bytes:
        """One token's text (`detokenize([token])`)."""
        piece = self._pieces.get(token)
        if piece is None:
            piece = self._pieces[token] = self.detokenize([token])
        return piece

    def ends_generation(self, token: int) -> bool:
        """Whether the token ends a generation (EOS, end of turn, ...)."""
        ends = self._ends.get(token)
        if ends is None:
            ends = self._ends[token] = bool(llama_cpp.llama_vocab_is_eog(self._model.vocab,
                                                                         token))
        return ends

    def sampler(self, *, temperature: float, top_k: int, top_p: float, min_p: float,
                seed: int) -> "Sampler":
        return Sampler(self, temperature=temperature, top_k=top_k, top_p=top_p,
                       min_p=min_p, seed=seed)

    def vocabulary(self) -> Vocabulary:
        """The vocabulary as llguidance sees it, for grammars (built on first use)."""
        vocab, size = self._model.vocab, self.n_vocab
        ends = [t for t in range(size) if llama_cpp.llama_vocab_is_eog(vocab, t)]

        def build() -> llguidance.LLTokenizer:
            # llguidance reads each token's attributes through a call llama-cpp-python
            # deprecates, once per token: one warning each otherwise.
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)
                return lltokenizer_from_vocab(vocab, n_vocab=size, eos_token=ends)

        return Vocabulary(build, size, ends)

    @property
    def handle(self) -> _internals.LlamaModel:
        return self._model


class SequenceContext:
    """A context of `sequences` sequences with `cells` KV cells (shared, or divided among
    them equally), decoding batches of at most `batch_tokens` tokens."""

    def __init__(self, model: SequenceModel, *, cells: int, sequences: int,
                 shared_cells: bool, batch_tokens: int, threads: int,
                 flash_attention: bool) -> None:
        params = llama_cpp.llama_context_default_params()
        params.n_ctx = cells
        params.n_batch = batch_tokens
        params.n_ubatch = batch_tokens
        params.n_seq_max = sequences
        # Unified: the sequences share all cells. Otherwise each has `cells / sequences`
        # of its own, and a request's logits do not depend on the others in the batch.
        params.kv_unified = shared_cells
        params.n_threads = threads
        params.n_threads_batch = threads
        params.no_perf = True
        params.flash_attn_type = (llama_cpp.LLAMA_FLASH_ATTN_TYPE_ENABLED if flash_attention
                                  else llama_cpp.LLAMA_FLASH_ATTN_TYPE_DISABLED)
        self._model = model
        self._context = _internals.LlamaContext(model=model.handle, params=params,
                                                verbose=False)
        self.cells: int = llama_cpp.llama_n_ctx(self._context.ctx)
        self.shared_cells = shared_cells
        self.batch_tokens = batch_tokens
        self._batch = llama_cpp.llama_batch_init(batch_tokens, 0, 1)
        self._tokens = np.ctypeslib.as_array(self._batch.token, shape=(batch_tokens,))
        self._positions = np.ctypeslib.as_array(self._batch.pos, shape=(batch_tokens,))
        self._seq_counts = np.ctypeslib.as_array(self._batch.n_seq_id, shape=(batch_tokens,))
        self._wants_logits = np.ctypeslib.as_array(self._batch.logits, shape=(batch_tokens,))
        self._seq_ids = [self._batch.seq_id[i] for i in range(batch_tokens)]
        self._row = ctypes.c_float * model.n_vocab

    def close(self) -> None:
        if self._batch is not None:
            llama_cpp.llama_batch_free(self._batch)
            self._batch = None
        close: Callable[[], None] = self._context.close  # left unannotated upstream
        close()

    def decode(self, entries: list[BatchEntry]) -> bool:
        """Evaluate the entries in one batch; False when the KV cache had no room for
        them (nothing was evaluated). Raises on any other failure."""
        count = len(entries)
        if not 0 < count <= self.batch_tokens:
            raise ValueError(f"a batch holds 1 to {self.batch_tokens} tokens, not {count}")
        for index, entry in enumerate(entries):
            self._tokens[index] = entry.token
            self._positions[index] = entry.position
            self._seq_counts[index] = 1
            self._seq_ids[index][0] = entry.sequence
            self._wants_logits[index] = entry.logits
        self._batch.n_tokens = count
        status = llama_cpp.llama_decode(self._context.ctx, self._batch)
        if status == 1:
            return False
        if status != 0:
            raise RuntimeError(f"llama_decode failed with status {status}")
        return True

    def logits(self, index: int) -> npt.NDArray[np.float32]:
        """The next-token logits of the batch's `index`-th entry (a view, valid until the
        next decode)."""
        address = self._row_address(index)
        # A view over the row through a ctypes array type made once (numpy's `as_array`
        # builds one per call: several times the cost, once per token).
        row: npt.NDArray[np.float32] = np.frombuffer(
            memoryview(self._row.from_address(address)), dtype=np.float32)
        return row

    def greedy(self, index: int) -> int | None:
        """The token of the first highest logit of the batch's `index`-th entry, or None
        when its row holds a NaN or an infinity: one native read of the row, where a
        numpy view, an argmax and a finiteness check cost three calls and three walks."""
        return greedy_token(self._row_address(index), self._model.n_vocab)

    def _row_address(self, index: int) -> int:
        """Where llama.cpp keeps the batch's `index`-th row of logits."""
        address = _logits_address(self._context.ctx, index)
        if not address:
            raise RuntimeError(f"llama.cpp has no logits for batch entry {index}")
        return address

    def forget(self, sequence: int, start: int = 0) -> None:
        """Free the sequence's KV cells from position `start` on."""
        llama_cpp.llama_memory_seq_rm(self._context.memory, sequence, start, -1)

    def save(self, sequence: int) -> tuple[KvBytes, int]:
        """The sequence's KV cells, and how many bytes of the buffer are set."""
        size = llama_cpp.llama_state_seq_get_size(self._context.ctx, sequence)
        buffer = (ctypes.c_uint8 * size)()
        written = llama_cpp.llama_state_seq_get_data(self._context.ctx, buffer, size,
                                                     sequence)
        return buffer, int(written)

    def restore(self, sequence: int, data: KvBytes, size: int) -> bool:
        """Put saved KV cells in the (emptied) sequence; False if llama.cpp refused them
        (no room, or another model's), leaving the sequence empty."""
        self.forget(sequence)
        loaded = llama_cpp.llama_state_seq_set_data(self._context.ctx, data, size, sequence)
        if loaded == 0:
            self.forget(sequence)
        return bool(loaded != 0)

    @property
    def raw(self) -> _internals.LlamaContext:
        return self._context


class Sampler:
    """One sequence's sampler chain: greedy, or
    top-k, top-p, min-p, temperature and a seeded draw, as llama-cpp-python chains them."""

    def __init__(self, model: SequenceModel, *, temperature: float, top_k: int,
                 top_p: float, min_p: float, seed: int) -> None:
        self._chain = llama_cpp.llama_sampler_chain_init(
            llama_cpp.llama_sampler_chain_default_params())
        self.greedy = temperature == 0.0
        """The chain only takes the highest logit (the first of equals), and keeps no state."""
        links = []
        if self.greedy:
            links.append(llama_cpp.llama_sampler_init_greedy())
        else:
            links += [llama_cpp.llama_sampler_init_top_k(top_k),
                      llama_cpp.llama_sampler_init_top_p(top_p, 1),
                      llama_cpp.llama_sampler_init_min_p(min_p, 1),
                      llama_cpp.llama_sampler_init_temp(temperature),
                      llama_cpp.llama_sampler_init_dist(seed)]
        for link in links:
            llama_cpp.llama_sampler_chain_add(self._chain, link)  # the chain owns it

    def sample(self, context: SequenceContext, index: int) -> int:
        """Draw the next token from the batch's `index`-th logits (and accept it)."""
        return int(llama_cpp.llama_sampler_sample(self._chain, context.raw.ctx, index))

    def close(self) -> None:
        if self._chain is not None:
            llama_cpp.llama_sampler_free(self._chain)
            self._chain = None
