"""The llama.cpp engine: a GGUF in one llama.cpp context whose sequences serve several
requests at once (`continuous_batch`), through llama-cpp-python's low-level bindings.

Prompts are rendered with the GGUF's own chat template, exactly as llama-cpp-python's
`create_chat_completion` does, and sampled with the same chain, so a greedy request gives
the same text as there. `max_batch` sequences decode together (1: one request at a time);
a conversation (`session_id`) keeps its KV between turns.
"""

import os
from collections import deque
from collections.abc import Iterator

from skulk.shared.types.chunks import TokenChunk
from skulk.shared.types.ids import ModelId, TaskId
from skulk.shared.types.tasks import ChatMessage, GenerationParams
from skulk.worker.engines.embedding_events import embedding_events
from skulk.worker.engines.grammar import compile as grammar_compile
from skulk.worker.engines.llama_cpp.continuous_batch import (
    Admitted,
    ContinuousBatch,
    Refused,
)
from skulk.worker.engines.llama_cpp.description import LlamaCppOptions
from skulk.worker.engines.llama_cpp.llama_lib import (
    ChatTemplate,
    LlamaContext,
    Offload,
    gpu_offload,
    offload_for,
    open_context,
)
from skulk.worker.engines.llama_cpp.sequences_lib import SequenceContext, SequenceModel
from skulk.worker.engines.llama_cpp.session_kv import SavedSessions
from skulk.worker.engines.llama_cpp.slots import SlotTable
from skulk.worker.engines.llama_cpp.step_widths import StepWidths
from skulk.worker.engines.protocol import (
    ContextOverflow,
    EngineConfig,
    EngineEvent,
    InvalidRequest,
)
from skulk.worker.engines.request_alone import RequestAlone

# Conversations whose KV is kept in host memory once their sequence is needed for others;
# beyond this the oldest is dropped (its next turn prefills in full). 135M at 2k tokens is
# ~46 MB of KV each.
MAX_SAVED_SESSIONS = 8


def grammar_for(params: GenerationParams) -> str | None:
    """The llguidance grammar that constrains sampling to the requested JSON, if any (the
    same grammar the mlx engine applies, so a schema means the same on both)."""
    try:
        return grammar_compile.grammar_for(params)
    except grammar_compile.GrammarRefused as error:
        raise InvalidRequest(str(error)) from error


class LlamaCppEngine:
    """An `Engine`: the runner submits requests as they come and steps it."""

    def __init__(self, config: EngineConfig) -> None:
        self._config = config
        self._options = LlamaCppOptions.of(config.options)
        self._model: SequenceModel | None = None
        self._template: ChatTemplate | None = None
        self._batch: ContinuousBatch | None = None
        self._embedder: LlamaContext | None = None  # made on the first embedding request
        self._offload: Offload | None = None  # a split instance's head: the others' layers
        self._to_embed: deque[tuple[TaskId, list[str]]] = deque()
        self._alone = RequestAlone(lambda: self._loaded()[2].step(), self.cancel)

    @property
    def max_batch(self) -> int:
        """How many requests decode together (`--no-batching`: one): the instance's
        concurrency bound."""
        return self._options.batch_size()

    def load(self) -> None:
        self._offload = self._split()
        self._model = SequenceModel(self._config.model_path, self._offload)
        self._template = self._model.chat_template()
        if self._template is None:
            raise InvalidRequest(f"{self._config.model_path} carries no chat template")
        limit, sequences = self._config.context_token_limit, self.max_batch
        shared = self._options.shared_kv
        context = SequenceContext(self._model, cells=limit if shared else limit * sequences,
                                  sequences=sequences, shared_cells=shared,
                                  # a prompt chunk beside every sequence's next token
                                  batch_tokens=self._options.prefill_chunk + sequences,
                                  flash_attention=self._options.flash_attention,
                                  threads=self._threads())
        widths = StepWidths() if self._options.measured_width else None
        self._batch = ContinuousBatch(self._model, context, SavedSessions(MAX_SAVED_SESSIONS),
                                      SlotTable(sequences), self._options.prefill_chunk,
                                      widths=widths)

    def _threads(self) -> int:
        return self._config.n_threads or os.cpu_count() or 1

    def _split(self) -> Offload | None:
        """For the head of a split instance: register the other ranks' device servers and
        say which layers go to them. For a whole instance, the layers the master gave the
        node's GPU (None: all on the CPU). A split's head keeps its own layers on its CPU."""
        options = self._options
        if self._config.world_size == 1:
            return gpu_offload(options.gpu_layers,
                               self._config.end_layer - self._config.start_layer)
        others = self._config.world_size - 1
        if len(options.rpc_servers) != others or len(options.rpc_layers) != others + 1:
            raise InvalidRequest(f"the head of a {self._config.world_size}-rank llama.cpp "
                                 f"instance needs {others} rpc_servers and "
                                 f"{others + 1} rpc_layers")
        # only a split needs ggml RPC
        from skulk.worker.engines.llama_cpp import rpc_lib, secure_links
        if secure_links.install_channel(options, secure_links.head_peers(options)) and \
                len(options.rpc_peers) != others:
            raise InvalidRequest("a secure split's head needs the node of each rpc_server "
                                 "(rpc_peers)")
        rpc_lib.register_servers(options.rpc_servers)
        return offload_for([int(count) for count in options.rpc_layers])

    def _loaded(self) -> tuple[SequenceModel, ChatTemplate, ContinuousBatch]:
        if self._model is None or self._template is None or self._batch is None:
            raise RuntimeError("the llama.cpp engine is used before load()")
        return self._model, self._template, self._batch

    def warm_up(self) -> None:
        warm = GenerationParams(model_id=ModelId("warm-up"),
                                messages=[ChatMessage(role="user", content="Hi")],
                                max_tokens=2, temperature=0.0)
        for _ in self.generate(warm):
            pass

    def embed(self, texts: list[str]) -> tuple[list[list[float]], int]:
        """Mean-pooled, unit-length embeddings from the same GGUF, in its own context."""
        if self._embedder is None:
            self._embedder = open_context(self._config.model_path,
                                          context_tokens=self._config.context_token_limit,
                                          threads=self._threads(), embedding=True,
                                          offload=self._offload)
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
        model, template, _ = self._loaded()
        if params.raw_prompt is not None:
            return model.tokenize(params.raw_prompt, add_bos=True, special=False)
        rendered = template.render(params.messages)
        return model.tokenize(rendered.text, add_bos=not rendered.added_special, special=True)

    def _admitted(self, task_id: TaskId, params: GenerationParams) -> Admitted:
        """The request checked and tokenized; raises `ContextOverflow` or `InvalidRequest`."""
        model, _, _ = self._loaded()
        prompt = self.prompt_tokens(params)
        if not prompt:
            raise InvalidRequest("the prompt is empty: give the model at least one token")
        if any(not 0 <= token < model.n_vocab for token in prompt):
            raise InvalidRequest(f"prompt token ids must be in [0, {model.n_vocab})")
        limit = self._config.context_token_limit
        if len(prompt) >= limit:
            raise ContextOverflow(len(prompt), limit)
        room = limit - len(prompt)
        max_tokens = room if params.max_tokens is None else min(params.max_tokens, room)
        if max_tokens < 1:
            raise InvalidRequest("max_tokens must be at least 1")
        return Admitted(task_id, params, prompt, max_tokens, grammar_for(params))

    # The batching protocol: the runner's way in.

    def submit(self, task_id: TaskId, params: GenerationParams) -> None:
        _, _, batch = self._loaded()
        if params.embed is not None:
            self._to_embed.append((task_id, params.embed))
            return
        try:
            batch.submit(self._admitted(task_id, params))
        except ContextOverflow as overflow:
            batch.submit(Refused(task_id, "context_length_exceeded", str(overflow)))
        except InvalidRequest as invalid:
            batch.submit(Refused(task_id, "invalid_request", str(invalid)))

    def cancel(self, task_id: TaskId) -> None:
        self._loaded()[2].cancel(task_id)

    @property
    def has_work(self) -> bool:
        return bool(self._alone.holding or self._to_embed) or \
            (self._batch is not None and self._batch.has_work)

    @property
    def idle_step_seconds(self) -> float | None:
        return None  # one process: nothing to meet when idle

    def step(self) -> list[EngineEvent]:
        events = self._alone.take_held()
        if self._to_embed:  # one embedding request per step, between batches
            events += embedding_events(self, *self._to_embed.popleft())
        return events + self._loaded()[2].step()

    # One request on its own (the warm-up, tests).

    def generate(self, params: GenerationParams) -> Iterator[TokenChunk]:
        """Refusals raise here, before any chunk."""
        task_id = self._alone.new_task_id()
        self._loaded()[2].submit(self._admitted(task_id, params))
        return self._alone.stream(task_id)
