"""The llama.cpp engine: llama-cpp-python on the CPU, through `llama_lib`.

It renders the prompt with the GGUF's own chat template, exactly as llama-cpp-python's
`create_chat_completion` does, then runs its own token loop over `Llama.generate`: the
same sampler, so greedy output is identical, with exact token counts, incremental UTF-8
decoding and stop-sequence hold-back.
"""

import codecs
import os
import random
from collections import OrderedDict
from collections.abc import Iterator

import numpy as np

from skulk.shared.types.chunks import (
    FinishReason,
    TokenChunk,
    TokenLogprob,
    TopLogprob,
    Usage,
)
from skulk.shared.types.ids import ConversationId, ModelId
from skulk.shared.types.tasks import ChatMessage, GenerationParams
from skulk.worker.engines.llama_cpp import session_kv
from skulk.worker.engines.llama_cpp.description import LlamaCppOptions
from skulk.worker.engines.llama_cpp.llama_lib import (
    ChatTemplate,
    Grammar,
    LlamaContext,
    Offload,
    any_json_grammar,
    gpu_offload,
    json_schema_grammar,
    offload_for,
    open_context,
)
from skulk.worker.engines.protocol import ContextOverflow, EngineConfig, InvalidRequest
from skulk.worker.engines.stop_sequences import StopScanner

# KV states kept for sessions not in the context; beyond this the oldest is dropped (its
# next turn prefills in full). 135M at 2k tokens is ~46 MB of KV each.
MAX_SAVED_SESSIONS = 8

# llama-cpp-python's own chat-completion defaults, so outputs match its server's.
TOP_K = 40
MIN_P = 0.05
REPEAT_PENALTY = 1.0


def grammar_for(params: GenerationParams) -> Grammar | None:
    """The llama.cpp grammar that constrains sampling to the requested JSON, if any."""
    if params.output != "json":
        return None
    if params.json_schema is None:
        return any_json_grammar()
    try:
        return json_schema_grammar(params.json_schema)
    except Exception as error:  # the converter raises whatever it meets first
        raise InvalidRequest(f"the JSON schema cannot be turned into a grammar: {error}") \
            from error


class LlamaCppEngine:
    def __init__(self, config: EngineConfig) -> None:
        self._config = config
        self._context: LlamaContext | None = None
        self._template: ChatTemplate | None = None
        # The KV state of sessions not in the context right now, least recently used first.
        self._saved_sessions: OrderedDict[ConversationId, session_kv.SavedKv] = OrderedDict()
        self._active_session: ConversationId | None = None
        self._embedder: LlamaContext | None = None  # made on the first embedding request
        self._offload: Offload | None = None  # a split instance's head: the others' layers

    def load(self) -> None:
        self._offload = self._split()
        self._context = self._open(embedding=False)
        self._template = self._context.chat_template()
        if self._template is None:
            raise InvalidRequest(f"{self._config.model_path} carries no chat template")

    def _split(self) -> Offload | None:
        """For the head of a split instance: register the other ranks' device servers and
        say which layers go to them. For a whole instance, the layers the master gave the
        node's GPU (None: all on the CPU). A split's head keeps its own layers on its CPU."""
        options = LlamaCppOptions.parse(self._config.options)
        if self._config.world_size == 1:
            return gpu_offload(options.gpu_layers,
                               self._config.end_layer - self._config.start_layer)
        others = self._config.world_size - 1
        if len(options.rpc_servers) != others or len(options.rpc_layers) != others + 1:
            raise InvalidRequest(f"the head of a {self._config.world_size}-rank llama.cpp "
                                 f"instance needs {others} rpc_servers and "
                                 f"{others + 1} rpc_layers")
        from skulk.worker.engines.llama_cpp import rpc_lib  # only a split needs ggml RPC
        rpc_lib.register_servers(options.rpc_servers)
        return offload_for([int(count) for count in options.rpc_layers])

    def _open(self, *, embedding: bool) -> LlamaContext:
        return open_context(self._config.model_path,
                            context_tokens=self._config.context_token_limit,
                            threads=self._config.n_threads or os.cpu_count(),
                            embedding=embedding, offload=self._offload)

    def _loaded(self) -> tuple[LlamaContext, ChatTemplate]:
        """The context and chat template `load` made."""
        if self._context is None or self._template is None:
            raise RuntimeError("the llama.cpp engine is used before load()")
        return self._context, self._template

    def warm_up(self) -> None:
        warm = GenerationParams(model_id=ModelId("warm-up"),
                                messages=[ChatMessage(role="user", content="Hi")],
                                max_tokens=2, temperature=0.0)
        for _ in self.generate(warm):
            pass

    def embed(self, texts: list[str]) -> tuple[list[list[float]], int]:
        """Mean-pooled, unit-length embeddings from the same GGUF, in its own context."""
        if self._embedder is None:
            self._embedder = self._open(embedding=True)
        limit = self._config.context_token_limit
        counts = [len(self._embedder.tokenize(t, add_bos=True, special=False)) for t in texts]
        for index, count in enumerate(counts):
            if count > limit:
                raise InvalidRequest(f"input {index} is {count} tokens; this model embeds at "
                                     f"most {limit}")
        return self._embedder.embed(texts), sum(counts)

    def prompt_tokens(self, params: GenerationParams) -> list[int]:
        """The prompt, then the tokens an interrupted run already generated (a failover)."""
        return self._prompt_only(params) + list(params.continuation)

    def _prompt_only(self, params: GenerationParams) -> list[int]:
        if params.prompt_token_ids is not None:
            return list(params.prompt_token_ids)
        context, template = self._loaded()
        if params.raw_prompt is not None:
            return context.tokenize(params.raw_prompt, add_bos=True, special=False)
        rendered = template.render(params.messages)
        return context.tokenize(rendered.text, add_bos=not rendered.added_special,
                                special=True)

    def generate(self, params: GenerationParams) -> Iterator[TokenChunk]:
        prompt = self.prompt_tokens(params)
        if not prompt:
            raise InvalidRequest("the prompt is empty: give the model at least one token")
        limit = self._config.context_token_limit
        if len(prompt) >= limit:
            raise ContextOverflow(len(prompt), limit)
        room = limit - len(prompt)
        max_tokens = room if params.max_tokens is None else min(params.max_tokens, room)
        if max_tokens < 1:
            raise InvalidRequest("max_tokens must be at least 1")
        grammar = grammar_for(params)
        self._enter_session(params.session_id)
        return self._stream(prompt, params, max_tokens, grammar)

    def _enter_session(self, session_id: ConversationId | None) -> None:
        """Put the session's KV in the context (saving the one there), so that
        `Llama.generate` reuses the longest common prefix and prefills only the rest."""
        if session_id == self._active_session:
            return
        context, _ = self._loaded()
        if self._active_session is not None:
            self._saved_sessions[self._active_session] = session_kv.save(context)
            self._saved_sessions.move_to_end(self._active_session)
            while len(self._saved_sessions) > MAX_SAVED_SESSIONS:
                self._saved_sessions.popitem(last=False)
        self._active_session = session_id
        saved = self._saved_sessions.pop(session_id, None) if session_id else None
        if saved is not None:
            session_kv.restore(context, saved)
        elif session_id is not None:
            context.reset()  # a new session (or an evicted one) starts from nothing

    def _logprob(self, token: int, top: int) -> TokenLogprob:
        """The token's log probability under the logits it was sampled from (the raw
        model distribution, before temperature and truncation), and the `top` likeliest."""
        context, _ = self._loaded()
        logits = context.last_logits()
        shifted = logits - logits.max()
        logprobs = shifted - np.log(np.exp(shifted).sum())

        def entry(candidate: int) -> TopLogprob:
            raw = context.detokenize([candidate])
            return TopLogprob(token=raw.decode("utf-8", errors="replace"), bytes=list(raw),
                              logprob=float(logprobs[candidate]))

        best: list[int] = [int(c) for c in np.argsort(logprobs)[::-1][:top]]
        chosen = entry(token)
        return TokenLogprob(token=chosen.token, bytes=chosen.bytes, logprob=chosen.logprob,
                            top=[entry(c) for c in best])

    def _reusable_prefix(self, prompt: list[int]) -> int:
        """How many prompt tokens `Llama.generate` will take from the KV cache."""
        context, _ = self._loaded()
        cached = 0
        for held, wanted in zip(context.held_tokens(), prompt, strict=False):
            if held != wanted:
                break
            cached += 1
        return cached - 1 if cached == len(prompt) else cached  # one is always re-evaluated

    def _stream(self, prompt: list[int], params: GenerationParams,
                max_tokens: int, grammar: Grammar | None) -> Iterator[TokenChunk]:
        context, _ = self._loaded()
        context.set_seed(params.seed if params.seed is not None else random.getrandbits(32))
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        scanner = StopScanner(list(params.stop))
        generated = 0
        cached = self._reusable_prefix(prompt)
        finish: FinishReason = "length"
        tokens = context.generate(prompt, top_k=params.top_k or TOP_K, top_p=params.top_p,
                                  min_p=MIN_P, temperature=params.temperature,
                                  repeat_penalty=REPEAT_PENALTY, grammar=grammar)
        held: list[int] = []  # tokens whose text the stop scanner still holds back
        scored: list[TokenLogprob] = []  # their log probabilities, when asked for
        try:
            for token in tokens:
                if context.ends_generation(token):
                    finish = "stop"
                    break
                generated += 1
                held.append(token)
                if params.logprobs is not None:
                    scored.append(self._logprob(token, params.logprobs))
                text = scanner.feed(decoder.decode(context.detokenize([token])))
                if text:
                    yield TokenChunk(text=text, token_ids=held, logprobs=scored)
                    held, scored = [], []
                if scanner.stopped:
                    finish = "stop"
                    break
                if generated >= max_tokens:
                    break
        finally:
            tokens.close()
        tail = "" if scanner.stopped else scanner.feed(decoder.decode(b"", final=True))
        tail += "" if scanner.stopped else scanner.flush()
        yield TokenChunk(text=tail, token_ids=[] if scanner.stopped else held,
                         logprobs=[] if scanner.stopped else scored,
                         finish_reason=finish, stop_sequence=scanner.matched,
                         usage=Usage(prompt_tokens=len(prompt), completion_tokens=generated,
                                     cached_tokens=max(cached, 0)))
