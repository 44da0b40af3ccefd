"""What a supervisor keeps of each request in flight to send its chunks on: their order,
the decode speed they show, and a traced request's runner timeline.

Each chunk leaves in a data-plane envelope (`DataChunk`) numbered in its request's order
(the receiving node puts them back in that order); the tokens after a request's first
chunk measure the runner's decode speed; a traced request's last chunk carries the
runner's spans (queue, prefill, decode), and on other ranks of a split instance, which
send no chunks, the queue and work spans go out on their own.
"""

import time

from skulk.shared.types.chunks import Chunk, DataChunk, TokenChunk
from skulk.shared.types.ids import NodeId, TaskId
from skulk.shared.types.tasks import TextGenerationTask
from skulk.shared.types.traces import Span
from skulk.worker.runner.built import built


def now_us() -> int:
    return time.time_ns() // 1000


class ChunkEnvelopes:
    """Per request: the next sequence number, when its first chunk left, the tokens
    since, and (traced) its timeline in wall µs: started, acknowledged, first chunk."""

    def __init__(self, node_id: NodeId, rank: int) -> None:
        self._node_id = node_id
        self._rank = rank
        self._sequences: dict[TaskId, int] = {}
        self._first_chunk_at: dict[TaskId, float] = {}
        self._tokens_after_first: dict[TaskId, int] = {}
        self._timeline: dict[TaskId, list[int]] = {}
        self.tokens_per_second: float | None = None

    def started(self, task: TextGenerationTask) -> None:
        if task.params.trace:
            self._timeline[task.task_id] = [now_us()]

    def acknowledged(self, task_id: TaskId) -> None:
        """The runner took the task (marked before its first chunk's time)."""
        timeline = self._timeline.get(task_id)
        if timeline is not None:
            timeline.append(now_us())

    def produced(self, task_id: TaskId) -> bool:
        """A chunk of the task has left."""
        return task_id in self._first_chunk_at

    def envelope(self, task: TextGenerationTask, chunk: Chunk) -> DataChunk:
        """The chunk's envelope, numbered next in its request's order; a traced request's
        last chunk gains the runner's spans."""
        task_id = task.task_id
        sequence = self._sequences.get(task_id, 0)
        self._sequences[task_id] = sequence + 1
        now = time.monotonic()
        first = self._first_chunk_at.setdefault(task_id, now)
        tokens = len(chunk.token_ids) if isinstance(chunk, TokenChunk) else 0
        if sequence == 0:
            self._tokens_after_first[task_id] = 0
        else:  # tokens after the first chunk measure decode speed (chunks may hold several)
            self._tokens_after_first[task_id] = self._tokens_after_first.get(task_id, 0) + tokens
            if now > first and self._tokens_after_first[task_id] > 1:
                self.tokens_per_second = self._tokens_after_first[task_id] / (now - first)
        timeline = self._timeline.get(task_id)
        if timeline is not None:
            if len(timeline) == 2:
                timeline.append(now_us())
            if isinstance(chunk, TokenChunk) and chunk.finish_reason is not None:
                chunk = chunk.model_copy(update={"spans": self._runner_spans(timeline)})
        # Built from typed fields, so not validated again: this runs once per token.
        return built(DataChunk, {"command_id": task.command_id, "owner_node": task.owner_node,
                                 "sequence": sequence, "chunk": chunk})

    def relayed(self, task_id: TaskId, tokens: int) -> None:
        """Tokens of the task the native relay wrote straight to its stream (no chunk
        carried them here): they count towards the decode speed as a chunk's would."""
        if tokens and task_id in self._tokens_after_first:
            self._tokens_after_first[task_id] += tokens

    def rank_spans(self, task_id: TaskId, engine_spans: list[Span]) -> list[Span] | None:
        """A traced task's spans that no chunk carries: the engine's timings and, on ranks
        other than 0 (which send no chunks), their queue and work time (None: not
        traced)."""
        timeline = self._timeline.get(task_id)
        if timeline is None:
            return None
        spans = [span.model_copy(update={"node_id": self._node_id, "rank": self._rank})
                 for span in engine_spans]  # the runner knows neither
        if self._rank != 0:
            marks = [*timeline[:2], now_us()]
            spans += [Span(name=name, node_id=self._node_id, rank=self._rank,
                           start_us=start, duration_us=max(end - start, 0))
                      for name, start, end in zip(["runner.queue", "runner.work"],
                                                  marks, marks[1:], strict=False)]
        return spans

    def _runner_spans(self, timeline: list[int]) -> list[Span]:
        """queue: handed to the runner → it took the task; prefill: → first chunk;
        decode: → last chunk."""
        marks = [*timeline, now_us()]
        names = ["runner.queue", "runner.prefill", "runner.decode"]
        return [Span(name=name, node_id=self._node_id, rank=self._rank,
                     start_us=start, duration_us=max(end - start, 0))
                for name, start, end in zip(names, marks, marks[1:], strict=False)]

    def forget(self, task_id: TaskId) -> None:
        self._sequences.pop(task_id, None)
        self._first_chunk_at.pop(task_id, None)
        self._tokens_after_first.pop(task_id, None)
        self._timeline.pop(task_id, None)
