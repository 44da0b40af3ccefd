"""Continuous batching in one llama.cpp context: every step decodes one batch holding the
next token of each decoding request (or of as many as cost least per token, the others
taking turns: `step_widths`) and prompt chunks of the newly admitted ones.

A request waits until a sequence is free, joins at the next step, and leaves the step it
finishes or is cancelled, without stopping the others. Each holds its own sampler chain.
Each sequence has cells for a whole context of its own by default, so a request's logits
do not depend on what else is in the batch. With shared cells (less memory) they can run
short: then free sequences give up the cells they kept for prefix reuse (a
conversation's are saved to host memory first), and if that is not enough the youngest
running request gives up its cells and is fed its tokens again later: it pauses, and
continues where it was.
"""

import math
import random
import time
from collections import deque
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from skulk.shared.types.chunks import ErrorChunk, ErrorKind, FinishReason, TokenLogprob
from skulk.shared.types.ids import TaskId
from skulk.shared.types.tasks import GenerationParams
from skulk.worker.engines.grammar.constraint import Constraint, GrammarBroken
from skulk.worker.engines.grammar.vocabulary import Vocabulary
from skulk.worker.engines.llama_cpp import batch_plan
from skulk.worker.engines.llama_cpp.batch_plan import Feed, Portion
from skulk.worker.engines.llama_cpp.sequences_lib import (
    Sampler,
    SequenceContext,
    SequenceModel,
)
from skulk.worker.engines.llama_cpp.session_kv import SavedSessions
from skulk.worker.engines.llama_cpp.slots import Slot, SlotTable, reusable
from skulk.worker.engines.llama_cpp.step_widths import StepWidths
from skulk.worker.engines.llama_cpp.token_text import TokenText
from skulk.worker.engines.protocol import EngineEvent, TaskDone, TaskJoined, TaskOutput
from skulk.worker.engines.token_logprobs import token_logprob

# llama-cpp-python's own chat-completion defaults, so outputs match its server's.
TOP_K = 40
MIN_P = 0.05


def all_finite(logits: npt.NDArray[np.float32], highest: int | None = None) -> bool:
    """No NaN or infinity among the logits: the highest and the lowest are finite (a NaN
    is both). Two reductions, where `np.isfinite(...).all()` writes a mask as long as the
    vocabulary first; one when the caller has the highest's index already (`argmax`
    returns a NaN's, if there is one)."""
    top = logits.max() if highest is None else logits[highest]
    return math.isfinite(top) and math.isfinite(logits.min())


@dataclass(frozen=True)
class Admitted:
    """A request checked and tokenized, ready to take a sequence."""

    task_id: TaskId
    params: GenerationParams
    prompt: list[int]
    max_tokens: int
    grammar: str | None  # the llguidance grammar its output follows


@dataclass(frozen=True)
class Refused:
    task_id: TaskId
    kind: ErrorKind
    message: str


@dataclass
class Running:
    request: Admitted
    slot: Slot
    sampler: Sampler
    text: TokenText
    cached: int
    pending: list[int]  # what enters the KV next: the prompt's rest, or the last token drawn
    order: int  # admission order: the youngest is paused first
    constraint: Constraint | None = None
    fed_at: int = 0  # the step that last fed it: decoding requests take turns by it
    cancelled: bool = False

    def feed(self) -> Feed:
        return Feed(self.request.task_id, self.slot.index, len(self.slot.held), self.pending)


@dataclass
class ContinuousBatch:
    model: SequenceModel
    context: SequenceContext
    sessions: SavedSessions
    table: SlotTable
    prefill_chunk: int  # prompt tokens a step takes of one request at most
    widths: StepWidths | None = None  # None: every decoding request decodes every step
    waiting: deque[Admitted | Refused] = field(default_factory=deque)
    running: list[Running] = field(default_factory=list)
    _cancelled_waiting: set[TaskId] = field(default_factory=set)
    _admissions: int = 0
    pauses: int = 0  # requests that gave up their cells for older ones (shared cells only)
    _vocabulary: Vocabulary | None = None  # made for the first constrained request
    _steps: int = 0
    _chosen: int | None = None  # this step's width, when `widths` chose it

    @property
    def has_work(self) -> bool:
        return bool(self.waiting or self.running)

    def submit(self, item: Admitted | Refused) -> None:
        self.waiting.append(item)

    def cancel(self, task_id: TaskId) -> None:
        for run in self.running:
            if run.request.task_id == task_id:
                run.cancelled = True
                return
        if any(item.task_id == task_id for item in self.waiting):
            self._cancelled_waiting.add(task_id)

    def step(self) -> list[EngineEvent]:
        events: list[EngineEvent] = []
        self._drop_cancelled(events)
        self._admit(events)
        if not self.running:
            return events
        portions, entries = self._plan()
        if not entries:
            return events
        self._steps += 1
        started = time.perf_counter()
        if not self.context.decode(entries):
            # llama.cpp found no room for the batch: try again smaller next step.
            if not self._pause_youngest(keep_one=True):
                self._fail(self.running[0], "the KV cache has no room for this request; "
                           "send a shorter prompt or a lower max_tokens", events)
            return events
        for portion in portions:
            self._advance(portion, events)
        if self.widths is not None and self._chosen == len(entries) == len(portions):
            self.widths.record(len(entries), time.perf_counter() - started)  # decoding only
        return events

    def _drop_cancelled(self, events: list[EngineEvent]) -> None:
        if self._cancelled_waiting:
            kept = deque(item for item in self.waiting
                         if item.task_id not in self._cancelled_waiting)
            for item in self.waiting:
                if item.task_id in self._cancelled_waiting:
                    events.append(TaskDone(item.task_id, "cancelled"))
            self.waiting, self._cancelled_waiting = kept, set()
        for run in [run for run in self.running if run.cancelled]:
            self._leave(run)
            events.append(TaskDone(run.request.task_id, "cancelled"))

    def _admit(self, events: list[EngineEvent]) -> None:
        """Refusals end at once; the others join, in order, while sequences are free."""
        for refused in [item for item in self.waiting if isinstance(item, Refused)]:
            self.waiting.remove(refused)
            events.append(TaskOutput(refused.task_id, ErrorChunk(error_kind=refused.kind,
                                                                 message=refused.message)))
            events.append(TaskDone(refused.task_id, "failed", refused.message))
        while self.waiting:
            request = self.waiting[0]
            assert isinstance(request, Admitted)
            pick = self.table.pick(request.prompt, request.params.session_id)
            if pick is None:
                return  # every sequence is busy: it joins when one frees up
            self.waiting.popleft()
            try:  # a resumed answer its grammar rejects ends here, with why
                constraint = self._constraint(request)
            except GrammarBroken as broken:
                events.append(TaskOutput(request.task_id, ErrorChunk(
                    error_kind="internal", message=str(broken))))
                events.append(TaskDone(request.task_id, "failed", str(broken)))
                continue
            self.running.append(self._start(request, pick.slot, pick.reused, constraint))
            events.append(TaskJoined(request.task_id))

    def _start(self, request: Admitted, slot: Slot, reused: int,
               constraint: Constraint | None) -> Running:
        session = request.params.session_id
        if slot.session is not None and slot.session != session:
            self.sessions.save(slot.session, self.context, slot.index, slot.held)
        if session is not None and session in self.sessions and \
                self.sessions.reusable(session, request.prompt) > reused:
            slot.held = self.sessions.restore(session, self.context, slot.index)
            reused = reusable(slot.held, request.prompt)
        self.context.forget(slot.index, reused)
        self.table.take(slot, request.task_id, session, keep=reused)
        params = request.params
        seed = params.seed if params.seed is not None else random.getrandbits(32)
        sampler = self.model.sampler(temperature=params.temperature,
                                     top_k=params.top_k or TOP_K, top_p=params.top_p,
                                     min_p=MIN_P, seed=seed)
        self._admissions += 1
        return Running(request, slot, sampler, TokenText(list(params.stop)), cached=reused,
                       pending=request.prompt[reused:], order=self._admissions,
                       constraint=constraint)

    def _constraint(self, request: Admitted) -> Constraint | None:
        if request.grammar is None:
            return None
        if self._vocabulary is None:
            self._vocabulary = self.model.vocabulary()
        return Constraint(self._vocabulary, request.grammar,
                          already=request.params.continuation)

    def _plan(self) -> tuple[list[Portion], list[batch_plan.BatchEntry]]:
        """This step's batch: this step's width of decoding requests (those fed longest
        ago first, then the oldest), then prefills, oldest first; the budget is the batch
        size or the free cells, whichever is less, made by emptying free sequences and,
        failing that, pausing the youngest requests."""
        width = self._width(sum(1 for run in self.running if len(run.pending) == 1))
        while True:
            decoding = sorted((run for run in self.running if len(run.pending) == 1),
                              key=lambda run: (run.fed_at, run.order))
            prefilling = sorted((run for run in self.running if len(run.pending) > 1),
                                key=lambda run: run.order)
            wanted = sum(len(run.pending) for run in self.running)  # a feed starts only whole
            while self._free_cells() < wanted and self._empty_an_idle_sequence():
                pass
            budget = min(self.context.batch_tokens, self._free_cells())
            fed = decoding[:width] + prefilling
            planned = batch_plan.plan(self._startable(fed, len(decoding)), budget,
                                      self.prefill_chunk)
            # Nothing fits (a prefill's next chunk, or this step's decoding tokens, exceed
            # the free cells): pause the youngest and plan again. The oldest alone fits.
            if planned[1] and budget >= min(width, len(decoding)) or \
                    not self._pause_youngest(keep_one=True):
                return planned

    def _width(self, decoding: int) -> int:
        """How many of the `decoding` requests this step decodes (`StepWidths`). One alone
        is no choice, and is not measured: it runs at a tail, its context longer than the
        steps it would be compared with."""
        self._chosen = None
        if self.widths is None or decoding < 2:
            return decoding
        self._chosen = self.widths.choose(decoding)
        return self._chosen

    def _startable(self, ordered: list[Running], decoding: int) -> list[Feed]:
        """The feeds worth starting: a request that holds no cells yet (new, or paused)
        starts only when its whole feed fits beside a step of every decoding request;
        started partly, it would be paused again at once."""
        room = self._free_cells() - decoding
        feeds = []
        for run in ordered:
            if self.context.shared_cells and len(run.pending) > 1 and not run.slot.held:
                if len(run.pending) > room:
                    continue
                room -= len(run.pending)
            feeds.append(run.feed())
        return feeds

    def _free_cells(self) -> int:
        """Cells free for this step. Sequences with cells of their own never run short:
        each holds a whole context, and no request is longer."""
        if not self.context.shared_cells:
            return self.context.batch_tokens
        return self.context.cells - self.table.cells_held()

    def _empty_an_idle_sequence(self) -> bool:
        idle = self.table.idle_holding()
        if not idle:
            return False
        slot = idle[0]
        if slot.session is not None:
            self.sessions.save(slot.session, self.context, slot.index, slot.held)
        self.context.forget(slot.index)
        slot.held.clear()
        return True

    def _pause_youngest(self, *, keep_one: bool) -> bool:
        """The youngest request holding cells gives them up; it is fed all its tokens
        again later. False when only the oldest holds any (it always fits alone)."""
        holding = sorted((run for run in self.running if run.slot.held),
                         key=lambda run: run.order)
        if len(holding) <= (1 if keep_one else 0):
            return False
        youngest = holding[-1]
        youngest.pending = youngest.slot.held + youngest.pending
        youngest.slot.held = []
        self.context.forget(youngest.slot.index)
        self.pauses += 1
        return True

    def _advance(self, portion: Portion, events: list[EngineEvent]) -> None:
        run = next(r for r in self.running if r.request.task_id == portion.feed.task_id)
        run.fed_at = self._steps
        run.slot.held.extend(run.pending[:portion.count])
        run.pending = run.pending[portion.count:]
        if portion.logits_at is None:
            return
        drawn = self._draw(run, portion.logits_at, events)
        if drawn is None:
            return
        token, logprob = drawn
        if self.model.ends_generation(token):
            self._finish(run, "stop", events)
            return
        chunk = run.text.add(token, self.model.piece(token), logprob)
        if chunk is not None:
            events.append(TaskOutput(run.request.task_id, chunk))
        if run.text.stopped:
            self._finish(run, "stop", events)
        elif run.text.generated >= run.request.max_tokens:
            self._finish(run, "length", events)
        else:
            run.pending = [token]

    def _draw(self, run: Running, index: int,
              events: list[EngineEvent]) -> tuple[int, TokenLogprob | None] | None:
        """The request's next token, from the batch's `index`-th row of logits, and its
        logprobs if it asked; None when the request failed instead (`events` say why).
        NaN/Inf logits (a faulty device server's activations, a broken kernel) fail it
        over instead of sampling garbage, and drop its KV so no later request reuses it."""
        asked = run.request.params.logprobs
        if run.constraint is None and run.sampler.greedy and asked is None:
            # Greedy and plain: the first highest logit, which llama.cpp's greedy sampler
            # also picks (without copying the vocabulary into a candidate array), the
            # row checked finite in the same read.
            token = self.context.greedy(index)
            if token is None:
                self._corrupt(run, events)
                return None
            return token, None
        # One view of the logits: each Python call here runs with caches cold from the
        # decode, and costs tens of microseconds of a ~10 ms token.
        logits = self.context.logits(index)
        greedy = int(logits.argmax()) if run.constraint is None and run.sampler.greedy \
            else None
        if not all_finite(logits, greedy):
            self._corrupt(run, events)
            return None
        # The raw logits, before a grammar masks them in place.
        raw = logits.copy() if asked is not None and run.constraint is not None else logits
        try:
            token = greedy if greedy is not None else self._choose(run, index, logits)
        except GrammarBroken as broken:  # a token its mask should have forbidden
            self._fail(run, str(broken), events)
            return None
        return token, None if asked is None else token_logprob(raw, token, asked,
                                                               self.model.piece)

    def _corrupt(self, run: Running, events: list[EngineEvent]) -> None:
        run.slot.held = []
        self.context.forget(run.slot.index)
        self._fail(run, "NaN/Inf in the model's logits: this instance's output cannot be "
                   "trusted", events, kind="pipeline_corrupt")

    def _choose(self, run: Running, index: int, logits: npt.NDArray[np.float32]) -> int:
        """The next token: the sampler's draw, under the request's grammar if it has one
        (its mask applied to the logits, the closing strategy near the end of the budget).
        `logits` is the batch's `index`-th row, checked finite."""
        constraint = run.constraint
        if constraint is None:
            return run.sampler.sample(self.context, index)
        token = constraint.forced()
        if token is None:
            logits[~constraint.allowed()] = -np.inf
            token = constraint.vetted(run.sampler.sample(self.context, index),
                                      run.request.max_tokens - run.text.generated)
        constraint.advance([token])
        return token

    def _finish(self, run: Running, reason: FinishReason, events: list[EngineEvent]) -> None:
        final = run.text.finish(reason, len(run.request.prompt), run.cached)
        events.append(TaskOutput(run.request.task_id, final))
        events.append(TaskDone(run.request.task_id, "complete"))
        self._leave(run)

    def _fail(self, run: Running, message: str, events: list[EngineEvent],
              kind: ErrorKind = "internal") -> None:
        events.append(TaskOutput(run.request.task_id, ErrorChunk(error_kind=kind,
                                                                 message=message)))
        events.append(TaskDone(run.request.task_id, "failed", message))
        self._leave(run)

    def _leave(self, run: Running) -> None:
        self.running.remove(run)
        run.sampler.close()
        self.table.release(run.slot)
