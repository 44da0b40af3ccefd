"""Continuous batching over a model shard: requests join a running batch and leave it.

One `step` on every rank of an instance, in lockstep:

1. agree (membership.py) on who leaves (finished, as rank 0 saw it; cancelled, on any
   rank) and who joins (held by every rank), with one fixed-shape all_sum, and a second
   for the ranks' replies only when the first carried proposals (a decode step of a
   settled batch makes one collective less, a round trip between machines);
2. prefill newcomers, at most `prefill_chunk` tokens per step so the others keep decoding;
   a newcomer's cache starts from a cached prefix of an earlier conversation when it can;
3. decode one token for every row of the batch: the deciding rank samples, and one
   fixed-shape all_sum hands the tokens to every rank (the others add zeros). A pipeline
   may hold the batch as several micro-batches (batch_caches.py), run one after another,
   so each rank works on one while the next rank works on the one before;
4. rank 0 turns tokens into chunks and sees who finished; they leave at the next step.

A pipeline in micro-batches (`micro_batches` > 1) keeps its ranks busy instead: from an
agreement point where only decoding rows are left, the decode steps run as an overlapped
run (pipeline_run.py, pipeline_schedule.py) with no collective among all ranks, until
rank 0 drains it for a membership change; each `step` then does one unit of the run.

Speculative decoding (when the instance drafts at all, and while one request decodes):
step 3 becomes a drafting round (speculation/round.py: the deciding rank drafts and
judges, every rank verifies). With several requests decoding, steps stay plain: batching
already spends the CPU better than verifying drafts would.

Only `ModelShard.forward`, `make_cache` and the `Group` collectives are used, so the loop
runs unchanged on a whole model, a pipeline split or a tensor split.
"""

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

import mlx.core as mx
import numpy as np
from loguru import logger

from skulk.shared.types.chunks import ErrorChunk
from skulk.shared.types.ids import TaskId
from skulk.worker.engines.grammar.constraint import Constraint, GrammarBroken
from skulk.worker.engines.grammar.vocabulary import Vocabulary
from skulk.worker.engines.mlx import membership, mlx_api
from skulk.worker.engines.mlx.batch_caches import BatchCaches
from skulk.worker.engines.mlx.batch_rows import Prefilling, Row
from skulk.worker.engines.mlx.collectives import await_peer
from skulk.worker.engines.mlx.commit import commit
from skulk.worker.engines.mlx.deciding import decide_rows
from skulk.worker.engines.mlx.membership import Control, Outcome, Proposal, Reply, TaskKey
from skulk.worker.engines.mlx.output import StreamedText
from skulk.worker.engines.mlx.pipeline_run import PipelineRun
from skulk.worker.engines.mlx.pipeline_schedule import may_overlap
from skulk.worker.engines.mlx.prefix_cache import PrefixCache
from skulk.worker.engines.mlx.requests import Request
from skulk.worker.engines.mlx.score_carrier import carry_scores
from skulk.worker.engines.mlx.shard import ModelShard
from skulk.worker.engines.mlx.speculation.accept import Verdict
from skulk.worker.engines.mlx.speculation.round import speculative_round
from skulk.worker.engines.mlx.speculation.speculator import Speculator
from skulk.worker.engines.mlx.split_embeddings import embedding_answer
from skulk.worker.engines.protocol import EngineEvent, TaskDone, TaskJoined, TaskOutput

# Builds rank 0's output of a request as it joins, given the prompt tokens it reused.
OutputFactory = Callable[[Request, int], StreamedText]


@dataclass(frozen=True)
class LoopSettings:
    slots: int = 8  # most requests in the batch at once; 1 runs them one at a time
    prefill_chunk: int = 256
    join_wait_seconds: float = 60.0
    # Whether this instance runs drafting rounds; the same on every rank, because the
    # rounds add collectives.
    speculation: bool = False
    # Micro-batches a decode step runs in turn (a pipeline keeps its ranks busy with one
    # per rank); the same on every rank, since each is a forward pass every rank takes.
    micro_batches: int = 1


@dataclass
class GenerationLoop:
    """The batch of one instance's rank; every rank runs its own, in lockstep."""

    shard: ModelShard
    prefix_cache: PrefixCache
    make_output: OutputFactory
    settings: LoopSettings = field(default_factory=LoopSettings)
    speculator: Speculator | None = None  # the deciding rank's drafting, if it drafts
    # The tokens as the deciding rank's grammars and rank 0's log probabilities see them.
    vocabulary: Vocabulary | None = None
    hidden_size: int = 0  # what a split's embeddings are (split_embeddings.py)
    _pending: dict[TaskKey, Request] = field(default_factory=dict)
    _prefilling: list[Prefilling] = field(default_factory=list)
    _rows: list[Row] = field(default_factory=list)
    _batch: BatchCaches = field(init=False)
    _finishing: set[TaskId] = field(default_factory=set)  # rank 0: finished, not yet left
    _run: PipelineRun | None = None  # an overlapped pipeline run in progress
    prefilled_tokens: int = 0  # prompt tokens run through prefill, for tests and logs
    overlapped_runs: int = 0  # overlapped pipeline runs started, for tests and logs
    overlapped_steps: int = 0  # micro-batch steps this rank ran in them

    def __post_init__(self) -> None:
        self._batch = BatchCaches(self.settings.micro_batches)

    @property
    def has_work(self) -> bool:
        return bool(self._pending or self._prefilling or self._rows)

    @property
    def batch_size(self) -> int:
        """Requests decoding together right now."""
        return len(self._rows)

    @property
    def emits(self) -> bool:
        """Rank 0 talks to the user; the other ranks run silently."""
        return self.shard.group.rank == 0

    def submit(self, request: Request) -> None:
        if request.key in self._pending or self._find(request.task_id) is not None:
            logger.warning("task {} was handed over twice; the second is ignored",
                           request.task_id)
            return
        self._pending[request.key] = request

    def cancel(self, task_id: TaskId) -> None:
        request = self._find(task_id)
        if request is not None:
            request.cancel_asked = True

    def step(self) -> list[EngineEvent]:
        events: list[EngineEvent] = []
        self._expire_pending(events)
        if self._run is not None:
            self._advance_run(self._run, events)
            return events
        control = self._agree_control()
        self._apply_leaves(control, events)
        self._admit(control.proposals, events)
        self._prefill()
        self._decode(events)
        return events

    def _find(self, task_id: TaskId) -> Request | None:
        for request in self._pending.values():
            if request.task_id == task_id:
                return request
        return next((r for r in self._roster() if r.task_id == task_id), None)

    def _all_sum(self, vector: membership.Vector, decided: bool = False) -> membership.Vector:
        """`decided`: the deciding rank's vector (tokens, drafts, a verdict), which the
        others wait for without spinning (collectives.await_peer)."""
        if decided and not self.shard.decides:
            await_peer(self.shard.group)
        summed = self.shard.group.all_sum(mx.array(vector, dtype=mx.int32))
        return np.array(summed, dtype=np.int32)

    def _roster(self) -> list[Request]:
        """Every request holding a slot, in slot order (the same on every rank)."""
        return [r.request for r in self._rows] + [p.request for p in self._prefilling]

    def _agree_control(self) -> Control:
        roster = self._roster()
        proposals = self._proposals() if self.emits else []
        finished = {i for i, r in enumerate(roster) if r.task_id in self._finishing}
        cancelled = {i for i, r in enumerate(roster) if r.cancel_asked}
        vector = membership.encode_control(proposals, finished, cancelled, self.settings.slots)
        return membership.decode_control(self._all_sum(vector), self.settings.slots)

    def _proposals(self) -> list[Proposal]:
        chosen = list(self._pending.values())[: membership.MAX_PROPOSALS]
        return [Proposal(r.key, len(r.prompt), self._reusable(r)) for r in chosen]

    def _reusable(self, request: Request) -> int:
        if request.refusal is not None or request.embed is not None or \
                not self.prefix_cache.enabled:
            return 0
        return self.prefix_cache.lookup(request.prompt).tokens

    def _expire_pending(self, events: list[EngineEvent]) -> None:
        """A request that not every rank received in time fails here, on its own rank."""
        if self.shard.group.size == 1:
            return
        deadline = time.monotonic() - self.settings.join_wait_seconds
        for key, request in list(self._pending.items()):
            if request.arrived < deadline:
                del self._pending[key]
                message = (f"not every rank of this instance received the request within "
                           f"{self.settings.join_wait_seconds:.0f} s; retry it")
                self._fail(request, ErrorChunk(error_kind="internal", message=message), events)

    def _apply_leaves(self, control: Control, events: list[EngineEvent]) -> None:
        rows_before = len(self._rows)
        kept_rows: list[int] = []
        for index, row in enumerate(self._rows):
            finished, cancelled = control.finished[index], control.cancelled[index]
            if not (finished or cancelled):
                kept_rows.append(index)
                continue
            if finished and self.prefix_cache.enabled and not row.failed:
                self.prefix_cache.insert(row.kv_tokens, self._batch.extract(index))
            if row.failed:
                self._leave(row.request, "failed", events, row.broken)
            else:
                self._leave(row.request, "complete" if finished else "cancelled", events)
        if len(kept_rows) < rows_before:
            self._rows = [self._rows[i] for i in kept_rows]
            self._batch.keep(kept_rows)
        still: list[Prefilling] = []
        for index, entry in enumerate(self._prefilling):
            if control.cancelled[rows_before + index]:
                self._leave(entry.request, "cancelled", events)
            else:
                still.append(entry)
        self._prefilling = still

    def _leave(self, request: Request, status: Literal["complete", "cancelled", "failed"],
               events: list[EngineEvent], error: str | None = None) -> None:
        self._finishing.discard(request.task_id)
        spans = () if self.speculator is None else self.speculator.forget(request.task_id)
        events.append(TaskDone(request.task_id, status, error, spans=spans))

    def _fail(self, request: Request, chunk: ErrorChunk, events: list[EngineEvent]) -> None:
        if self.emits:
            events.append(TaskOutput(request.task_id, chunk))
        events.append(TaskDone(request.task_id, "failed", chunk.message))

    def _admit(self, proposals: list[Proposal], events: list[EngineEvent]) -> None:
        if not proposals:
            return  # every rank decoded the same empty proposals from the control's sum
        replies = [self._reply(p) for p in proposals]
        summed = self._all_sum(membership.encode_replies(replies))
        free = self.settings.slots - len(self._roster())
        outcomes = membership.decide(proposals, summed, self.shard.group.size, free)
        for proposal, outcome in zip(proposals, outcomes, strict=True):
            if outcome != "wait":
                self._settle(self._pending.pop(proposal.key), proposal, outcome, events)

    def _reply(self, proposal: Proposal) -> Reply:
        request = self._pending.get(proposal.key)
        if request is None:
            return Reply(holds=False)
        refused = request.refusal is not None
        return Reply(holds=True, refuses=refused, cancel_asked=request.cancel_asked,
                     other_length=not refused and len(request.prompt) != proposal.prompt_tokens,
                     shorter_reuse=self._reusable(request) < proposal.reuse)

    def _settle(self, request: Request, proposal: Proposal, outcome: Outcome,
                events: list[EngineEvent]) -> None:
        if outcome == "cancel":
            self._leave(request, "cancelled", events)
        elif outcome == "refuse":
            refusal = request.refusal
            chunk = (ErrorChunk(error_kind=refusal.kind, message=refusal.message)
                     if refusal is not None else ErrorChunk(
                         error_kind="internal", message="another rank of this instance "
                         "refused the request (its tokenizer or limits differ)"))
            self._fail(request, chunk, events)
        elif request.embed is not None:  # answered at once, by every rank in step
            events += embedding_answer(self.shard, request, self.hidden_size)
        else:
            self._start_prefill(request, proposal.reuse if outcome == "join" else 0)
            events.append(TaskJoined(request.task_id))

    def _start_prefill(self, request: Request, reuse: int) -> None:
        cache = self.shard.make_cache([0])
        if reuse > 0:
            hit = self.prefix_cache.lookup(request.prompt)
            mlx_api.seed_row(cache, hit.kv, reuse)  # type: ignore[arg-type]
            self.prefix_cache.use(hit, reuse)
            logger.debug("request {} reuses {} cached prompt tokens", request.task_id, reuse)
        self._prefilling.append(Prefilling(request, cache, reuse, reuse))

    def _prefill(self) -> None:
        """Up to `prefill_chunk` prompt tokens per step, in chunks whose bounds do not
        depend on the other requests (so a request computes the same alone or batched)."""
        budget = self.settings.prefill_chunk
        for entry in self._prefilling:
            target = len(entry.request.prompt) - 1  # the last token goes in with the decode
            while entry.position < target and budget > 0:
                size = min(self.settings.prefill_chunk, target - entry.position)
                piece = entry.request.prompt[entry.position: entry.position + size]
                self.shard.forward(mx.array([piece], dtype=mx.int32), entry.cache)
                mlx_api.evaluate_cache(entry.cache)
                entry.position += size
                self.prefilled_tokens += size
                budget -= size
        ready = [e for e in self._prefilling if e.position >= len(e.request.prompt) - 1]
        self._prefilling = [e for e in self._prefilling if e not in ready]
        for entry in ready:
            self._merge(entry)

    def _merge(self, entry: Prefilling) -> None:
        request = entry.request
        self._batch.add(entry.cache)
        output = self.make_output(request, entry.reused) if self.emits else None
        constraint, broken = None, None
        if request.grammar is not None and self.shard.decides:
            if self.vocabulary is None:
                raise RuntimeError("the deciding rank has no vocabulary for grammars")
            try:  # a resumed answer the grammar rejects fails at its first decode
                constraint = Constraint(self.vocabulary, request.grammar,
                                        already=request.params.continuation)
            except GrammarBroken as error:
                broken = str(error)
        self._rows.append(Row(request, next_input=request.prompt[-1],
                              kv_tokens=list(request.prompt[:-1]), reused=entry.reused,
                              output=output, constraint=constraint, broken=broken))

    def _decode(self, events: list[EngineEvent]) -> None:
        if not self._rows:
            return
        if may_overlap(self.settings.micro_batches, self.shard.group.size, len(self._rows),
                       len(self._prefilling), self.settings.speculation):
            self._run = PipelineRun(self.shard, self._batch.micro_batch_rows(),
                                    self.settings.slots, self)
            self.overlapped_runs += 1
            self._run.start()
            self.overlapped_steps += self._run.steps
            return
        if self.settings.speculation and len(self._rows) == 1:
            row = self._rows[0]
            drafts, verdict = speculative_round(self.shard, self.speculator,
                                                self.settings.slots, self._all_sum, row,
                                                self._batch.only(), self.vocabulary)
            carry_scores(self.shard, [row], verdict.accepted + 1)
            self._commit(row, drafts, verdict, events)
            return
        started = time.perf_counter()
        chosen = np.zeros(len(self._rows), dtype=np.int32)
        # Micro-batch by micro-batch: a rank hands micro-batch k on and starts k+1 while
        # the next rank computes k (one micro-batch: the whole batch in one pass).
        for rows, cache in self._batch.micro_batch_rows():
            inputs = mx.array([[self._rows[i].next_input] for i in rows], dtype=mx.int32)
            logits = self.shard.forward(inputs, cache)
            if not self.shard.decides:
                mlx_api.evaluate_cache(cache)
                continue
            if logits is None:
                raise RuntimeError("the deciding shard returned no logits")
            chosen[rows] = decide_rows(logits[:, -1, :], [self._rows[i] for i in rows],
                                       self.vocabulary)
        if self.speculator is not None and len(self._rows) == 1:
            self.speculator.cost.observe(1, time.perf_counter() - started)
        tokens = self._all_sum(chosen, decided=True).tolist()
        carry_scores(self.shard, self._rows, 1)
        for row, token in zip(self._rows, tokens, strict=True):
            self._commit(row, [], Verdict(0, token), events)

    def _advance_run(self, run: PipelineRun, events: list[EngineEvent]) -> None:
        steps = run.steps
        run.advance(events)
        self.overlapped_steps += run.steps - steps
        if run.done:
            self._run = None

    # The rows as an overlapped run sees them (pipeline_run.RunHost).
    def run_inputs(self, rows: list[int]) -> tuple[int, ...]:
        return tuple(self._rows[i].next_input for i in rows)

    def run_decide(self, rows: list[int], logits: mx.array) -> list[int]:
        return decide_rows(logits, [self._rows[i] for i in rows], self.vocabulary)

    def run_carry_scores(self, rows: list[int]) -> None:
        carry_scores(self.shard, [self._rows[i] for i in rows], 1)

    def run_commit(self, row: int, token: int, events: list[EngineEvent]) -> None:
        self._commit(self._rows[row], [], Verdict(0, token), events)

    def run_wants_agreement(self) -> bool:
        cancelled = any(row.request.cancel_asked for row in self._rows)
        if not self.emits:
            return cancelled
        joinable = bool(self._pending) and len(self._roster()) < self.settings.slots
        return cancelled or joinable or bool(self._finishing)

    def _commit(self, row: Row, drafts: list[int], verdict: Verdict,
                events: list[EngineEvent]) -> None:
        if commit(row, drafts, verdict, self.vocabulary, events):
            self._finishing.add(row.request.task_id)
