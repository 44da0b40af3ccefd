"""A weightless, deterministic engine: a TEST DOUBLE for fast tests of the runner path.

It answers with the words of the last user message, one word per token and step; its
options (`EchoOptions`) slow it down, crash it or make it hard to stop. It runs
`max_batch` requests together (one by default, so a second waits for the first); the
context limit counts words.
"""

import os
import signal
import time
from collections import deque
from dataclasses import dataclass, field

from skulk.shared.types.chunks import ErrorChunk, FinishReason, TokenChunk, Usage
from skulk.shared.types.ids import TaskId
from skulk.shared.types.tasks import GenerationParams
from skulk.testing.echo.description import EchoOptions
from skulk.worker.engines.protocol import (
    ContextOverflow,
    EngineConfig,
    EngineEvent,
    TaskDone,
    TaskJoined,
    TaskOutput,
)
from skulk.worker.engines.stop_sequences import StopScanner


@dataclass
class _Echoing:
    """One request in the batch: its words, and how far it got."""

    task_id: TaskId
    params: GenerationParams
    words: list[str]
    prompt_words: int
    next_index: int
    limit: int
    scanner: StopScanner
    generated: int = field(default=0)


def embedding(texts: list[str]) -> tuple[list[list[float]], int]:
    """A unit vector per text: its length in words, letters and other characters."""
    vectors = []
    for text in texts:
        raw = [float(len(text.split())), float(sum(c.isalpha() for c in text)),
               float(sum(not c.isalpha() for c in text))]
        norm = sum(x * x for x in raw) ** 0.5 or 1.0
        vectors.append([x / norm for x in raw])
    return vectors, sum(len(t.split()) for t in texts)


class EchoEngine:
    """An `Engine`: requests join as slots free up and each step echoes a word of each."""

    def __init__(self, config: EngineConfig) -> None:
        self._config = config
        self._options = EchoOptions.of(config.options)
        self._slots = self._options.batch_size()
        self._waiting: deque[tuple[TaskId, GenerationParams]] = deque()
        self._running: dict[TaskId, _Echoing] = {}
        self._cancelled: list[TaskId] = []

    def load(self) -> None:
        if self._options.fail_load:
            raise RuntimeError("echo engine told to fail loading")
        if self._options.ignore_sigterm:
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
        time.sleep(self._options.load_seconds)

    def warm_up(self) -> None:
        pass

    def submit(self, task_id: TaskId, params: GenerationParams) -> None:
        self._waiting.append((task_id, params))

    def cancel(self, task_id: TaskId) -> None:
        self._cancelled.append(task_id)

    @property
    def has_work(self) -> bool:
        return bool(self._waiting or self._running or self._cancelled)

    @property
    def idle_step_seconds(self) -> float | None:
        return None

    def step(self) -> list[EngineEvent]:
        events = self._cancel_now()
        # Requests joining now give their first word next step: the step's events go out
        # when it returns, and a join must not wait behind a slow word.
        echoing = list(self._running.values())
        while self._waiting and len(self._running) < self._slots:
            events += self._join(*self._waiting.popleft())
        if any(self._has_word(echo) for echo in echoing):
            time.sleep(self._options.delay)
        for echo in echoing:
            events += self._advance(echo)
        return events

    def _cancel_now(self) -> list[EngineEvent]:
        events: list[EngineEvent] = []
        for task_id in self._cancelled:
            waiting = [entry for entry in self._waiting if entry[0] == task_id]
            for entry in waiting:
                self._waiting.remove(entry)
            if waiting or self._running.pop(task_id, None) is not None:
                events.append(TaskDone(task_id, "cancelled"))
        self._cancelled.clear()
        return events

    def _join(self, task_id: TaskId, params: GenerationParams) -> list[EngineEvent]:
        if params.embed is not None:
            vectors, tokens = embedding(params.embed)
            chunk = TokenChunk(text="", embeddings=vectors, finish_reason="stop",
                               usage=Usage(prompt_tokens=tokens, completion_tokens=0))
            return [TaskJoined(task_id), TaskOutput(task_id, chunk),
                    TaskDone(task_id, "complete")]
        prompt_words = sum(len(m.content.split()) for m in params.messages)
        limit = self._config.context_token_limit
        if prompt_words >= limit:
            message = str(ContextOverflow(prompt_words, limit))
            return [TaskJoined(task_id),
                    TaskOutput(task_id, ErrorChunk(error_kind="context_length_exceeded",
                                                   message=message)),
                    TaskDone(task_id, "failed", message)]
        last_user = next((m.content for m in reversed(params.messages) if m.role == "user"),
                         "")
        words = last_user.split()
        # A continuation goes on after the words an interrupted run already gave.
        given = len(params.continuation)
        self._running[task_id] = _Echoing(
            task_id=task_id, params=params, words=words,
            prompt_words=prompt_words + given, next_index=given,
            limit=params.max_tokens or len(words) - given,
            scanner=StopScanner(list(params.stop)))
        return [TaskJoined(task_id)]

    @staticmethod
    def _has_word(echo: _Echoing) -> bool:
        return echo.next_index < len(echo.words) and echo.generated < echo.limit

    def _advance(self, echo: _Echoing) -> list[EngineEvent]:
        """One word of `echo`, or its last chunk once it has none left to give."""
        if not self._has_word(echo):
            words_left = echo.next_index < len(echo.words)
            return self._finish(echo, "length" if words_left else "stop")
        index = echo.next_index
        if self._options.crash_at and index + 1 >= self._options.crash_at:
            os._exit(3)
        echo.next_index += 1
        echo.generated += 1
        word = echo.words[index]
        text = echo.scanner.feed(word if index == 0 else " " + word)
        events: list[EngineEvent] = []
        if text:
            events.append(TaskOutput(echo.task_id, TokenChunk(text=text, token_ids=[index])))
        if echo.scanner.stopped:
            events += self._finish(echo, "stop")
        return events

    def _finish(self, echo: _Echoing, finish: FinishReason) -> list[EngineEvent]:
        del self._running[echo.task_id]
        usage = Usage(prompt_tokens=echo.prompt_words, completion_tokens=echo.generated)
        chunk = TokenChunk(text=echo.scanner.flush(), finish_reason=finish,
                           stop_sequence=echo.scanner.matched, usage=usage)
        return [TaskOutput(echo.task_id, chunk), TaskDone(echo.task_id, "complete")]
