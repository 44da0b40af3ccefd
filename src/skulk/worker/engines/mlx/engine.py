"""The MLX engine (mlx-lm): continuous batching, a prompt-prefix KV cache, and the same
loop whether the model is whole here or split across the ranks of a ring. Its options
are `MlxOptions` (options.py), parsed from `EngineConfig.options` when it is made.
"""

import dataclasses
import time
from collections import deque
from collections.abc import Iterator
from pathlib import Path

from loguru import logger

from skulk.shared.types.chunks import TokenChunk
from skulk.shared.types.ids import ModelId, TaskId
from skulk.shared.types.tasks import ChatMessage, GenerationParams
from skulk.worker.engines.embedding_events import embedding_events
from skulk.worker.engines.grammar.vocabulary import Vocabulary
from skulk.worker.engines.mlx import cpu, mlx_api
from skulk.worker.engines.mlx.collectives import RingGroup, SoloGroup, connect_ring
from skulk.worker.engines.mlx.corruption_guard import guard_shard, unguarded
from skulk.worker.engines.mlx.drafters.registry import build_drafters, default_drafter
from skulk.worker.engines.mlx.generation_loop import GenerationLoop, LoopSettings
from skulk.worker.engines.mlx.options import MlxOptions
from skulk.worker.engines.mlx.output import StreamedText
from skulk.worker.engines.mlx.prefix_cache import PrefixCache
from skulk.worker.engines.mlx.requests import (
    NO_SPECULATION,
    Request,
    SpeculationChoice,
    build_request,
    embed_tokens,
)
from skulk.worker.engines.mlx.shard import ModelShard, WholeModelShard
from skulk.worker.engines.mlx.shard_loader import load_shard
from skulk.worker.engines.mlx.speculation.speculator import Speculator
from skulk.worker.engines.mlx.weights_agreement import check_ranks_agree
from skulk.worker.engines.protocol import (
    ContextOverflow,
    EngineConfig,
    EngineEvent,
    InvalidRequest,
    TaskDone,
)
from skulk.worker.engines.request_alone import RequestAlone, RequestFailed

WARM_UP_TASK = TaskId("skulk-warm-up")


class MlxEngine:
    """An `Engine`: the runner submits, cancels and steps; `generate` runs one request on
    its own (the warm-up, tests)."""

    def __init__(self, config: EngineConfig) -> None:
        self._config = config
        self._options = MlxOptions.of(config.options)
        self._model_dir = Path(config.model_path)
        self._tokenizer: mlx_api.Tokenizer | None = None
        self._loop: GenerationLoop | None = None
        self._vocab_size = 0
        self._alone = RequestAlone(lambda: self._running().step(), self.cancel)
        self._speculation = NO_SPECULATION  # what requests that do not choose get
        self._joined_us: dict[TaskId, int] = {}  # when each traced request was submitted
        self._to_embed: deque[tuple[TaskId, list[str]]] = deque()  # a whole model's

    @property
    def loop(self) -> GenerationLoop:
        """The generation loop (its counters: `prefilled_tokens`, `prefix_cache.hits`)."""
        return self._running()

    def load(self) -> None:
        config, options = self._config, self._options
        if not (self._model_dir / "config.json").exists():
            raise InvalidRequest(f"{self._model_dir} is not an MLX model directory "
                                 "(config.json, safetensors, tokenizer files)")
        cpu.set_blas_threads(config.n_threads)
        logger.info("mlx runner: BLAS is {}", "OpenBLAS" if cpu.openblas_loaded()
                    else "the wheel's reference BLAS (slow fp32)")
        shape = mlx_api.read_model_shape(self._model_dir)
        self._vocab_size = shape.vocab_size
        self._tokenizer = mlx_api.load_tokenizer(self._model_dir)
        if not self._tokenizer.has_chat_template:
            raise InvalidRequest(f"{self._model_dir} carries no chat template")
        budget = int(options.prefix_cache_mb * 2**20)
        prefix = PrefixCache(max_entries=options.prefix_cache_entries,
                             max_tokens=budget // shape.kv_bytes_per_token)
        settings = LoopSettings(
            slots=options.batch_size(),
            prefill_chunk=options.prefill_chunk,
            join_wait_seconds=options.join_wait_seconds,
            speculation=options.speculation,
            micro_batches=(config.world_size if options.pipeline_micro_batches
                           and options.sharding == "pipeline" else 1))
        shard = self._open_shard()
        speculator = None
        if options.speculation:
            self._speculation = SpeculationChoice(default_drafter(options), options.max_draft)
            if shard.decides:  # only the rank that decides tokens drafts
                speculator = Speculator(build_drafters(options), self._vocab_size,
                                        adaptive=options.draft_adaptive)
                speculator.measure_drafters()
        vocabulary = None
        if shard.decides or config.rank == 0:  # grammars there, log probabilities named here
            vocabulary = Vocabulary.of_tokenizer_json(self._model_dir / "tokenizer.json",
                                                      shape.vocab_size,
                                                      self._tokenizer.eos_token_ids)
        self._loop = GenerationLoop(shard, prefix, self._new_output, settings, speculator,
                                    vocabulary=vocabulary, hidden_size=shape.hidden_size)

    def _open_shard(self) -> ModelShard:
        config, options = self._config, self._options
        if config.world_size == 1:
            return load_shard(self._model_dir, SoloGroup(), 0,
                              mlx_api.read_model_shape(self._model_dir).n_layers, "pipeline")
        hosts = options.ring_hosts
        if len(hosts) != config.world_size:
            raise InvalidRequest(f"a split MLX instance needs ring_hosts with one address per "
                                 f"rank ({config.world_size}); got {hosts}")
        group = connect_ring(config.rank, hosts, options.ring_connect_seconds)
        check_ranks_agree(group, options.weights_sha256)
        return guard_shard(load_shard(self._model_dir, group, config.start_layer,
                                      config.end_layer, options.sharding))

    def _running(self) -> GenerationLoop:
        if self._loop is None:
            raise RuntimeError("the mlx engine is used before load()")
        return self._loop

    def _new_output(self, request: Request, reused: int) -> StreamedText:
        assert self._tokenizer is not None
        return StreamedText(detokenizer=self._tokenizer.detokenizer(
                                after=request.params.continuation),
                            stops=list(request.params.stop),
                            eos_token_ids=self._tokenizer.eos_token_ids,
                            max_tokens=request.max_tokens, prompt_tokens=len(request.prompt),
                            cached_tokens=reused)

    def warm_up(self) -> None:
        """One short generation: compiles kernels and, on a ring, proves every rank works.
        Every rank runs it under the same id, so they meet in the same batch."""
        started = time.monotonic()
        params = GenerationParams(model_id=ModelId("warm-up"), max_tokens=2, temperature=0.0,
                                  messages=[ChatMessage(role="user", content="Hi")])
        try:
            for _ in self._generate_as(WARM_UP_TASK, params):
                pass
        except RequestFailed as error:
            raise RuntimeError(f"the warm-up generation did not complete: {error}") from error
        logger.info("mlx engine warmed up in {:.2f} s", time.monotonic() - started)

    def embed(self, texts: list[str]) -> tuple[list[list[float]], int]:
        """Mean-pooled, unit-length embeddings of a whole model; a split's are computed
        by every rank in step, as a request of the loop (split_embeddings.py)."""
        assert self._tokenizer is not None, "embed before load"
        shard = self._running().shard
        if not isinstance(shard, WholeModelShard):
            raise RuntimeError("embed() is a whole model's; a split embeds in its loop")
        vectors, counted = [], 0
        for tokens in embed_tokens(texts, self._tokenizer, self._config.context_token_limit):
            vector = shard.model.mean_pooled(tokens)
            if vector is None:
                raise InvalidRequest("this model's MLX class exposes no hidden states to "
                                     "embed from; place it with the llama_cpp engine")
            vectors.append(vector)
            counted += len(tokens)
        return vectors, counted

    def submit(self, task_id: TaskId, params: GenerationParams) -> None:
        assert self._tokenizer is not None, "submit before load"
        if params.embed is not None and isinstance(self._running().shard, WholeModelShard):
            self._to_embed.append((task_id, params.embed))
            return
        request = build_request(task_id, params, self._tokenizer,
                                self._config.context_token_limit, self._vocab_size,
                                self._speculation)
        if params.trace:
            self._joined_us[task_id] = time.time_ns() // 1000
        self._running().submit(request)

    def cancel(self, task_id: TaskId) -> None:
        self._running().cancel(task_id)

    @property
    def idle_step_seconds(self) -> float | None:
        if self._config.world_size == 1:
            return None
        return self._options.idle_step_seconds

    @property
    def has_work(self) -> bool:
        return self._alone.holding or bool(self._to_embed) or (
            self._loop is not None and self._loop.has_work)

    def step(self) -> list[EngineEvent]:
        events = self._alone.take_held()
        if self._to_embed:  # a whole model's: one request per step, between decode steps
            events += embedding_events(self, *self._to_embed.popleft())
        if self._running().has_work or not events:
            events += self._running().step()
        return [self._with_hops(event) for event in events]

    def _with_hops(self, event: EngineEvent) -> EngineEvent:
        """A traced request leaves with the pipeline hops made while it was in the batch
        (beside what the loop reported, such as a drafter's outages)."""
        if not isinstance(event, TaskDone) or event.task_id not in self._joined_us:
            return event
        joined = self._joined_us.pop(event.task_id)
        group = unguarded(self._running().shard.group)
        if not isinstance(group, RingGroup):
            return event
        return dataclasses.replace(event, spans=event.spans + group.hops.spans_since(joined))

    def generate(self, params: GenerationParams) -> Iterator[TokenChunk]:
        """One request on its own; refusals raise here, before any chunk."""
        return self._generate_as(self._alone.new_task_id(), params)

    def _generate_as(self, task_id: TaskId, params: GenerationParams) -> Iterator[TokenChunk]:
        assert self._tokenizer is not None, "generate before load"
        request = build_request(task_id, params, self._tokenizer,
                                self._config.context_token_limit, self._vocab_size,
                                self._speculation)
        if request.refusal is not None:
            if request.refusal.kind == "context_length_exceeded":
                raise ContextOverflow(len(request.prompt), self._config.context_token_limit)
            raise InvalidRequest(request.refusal.message)
        self._running().submit(request)
        return self._alone.stream(task_id)
