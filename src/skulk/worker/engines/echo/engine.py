"""A weightless, deterministic engine: a TEST DOUBLE for fast tests of the runner path.

It answers with the words of the last user message, one word per token; its options
(`EchoOptions`) slow it down, crash it or make it hard to stop. The context limit counts
words.
"""

import os
import signal
import time
from collections.abc import Iterator

from skulk.shared.types.chunks import FinishReason, TokenChunk, Usage
from skulk.shared.types.tasks import GenerationParams
from skulk.worker.engines.echo.description import EchoOptions
from skulk.worker.engines.protocol import ContextOverflow, EngineConfig
from skulk.worker.engines.stop_sequences import StopScanner


class EchoEngine:
    def __init__(self, config: EngineConfig) -> None:
        self._config = config
        self._options = EchoOptions.parse(config.options)

    def load(self) -> None:
        if self._options.fail_load:
            raise RuntimeError("echo engine told to fail loading")
        if self._options.ignore_sigterm:
            signal.signal(signal.SIGTERM, signal.SIG_IGN)

    def warm_up(self) -> None:
        pass

    def embed(self, texts: list[str]) -> tuple[list[list[float]], int]:
        """A unit vector per text: its length in words, letters and other characters."""
        vectors = []
        for text in texts:
            raw = [float(len(text.split())), float(sum(c.isalpha() for c in text)),
                   float(sum(not c.isalpha() for c in text))]
            norm = sum(x * x for x in raw) ** 0.5 or 1.0
            vectors.append([x / norm for x in raw])
        return vectors, sum(len(t.split()) for t in texts)

    def generate(self, params: GenerationParams) -> Iterator[TokenChunk]:
        prompt_words = sum(len(m.content.split()) for m in params.messages)
        if prompt_words >= self._config.context_token_limit:
            raise ContextOverflow(prompt_words, self._config.context_token_limit)
        last_user = next((m.content for m in reversed(params.messages) if m.role == "user"), "")
        return self._stream(last_user.split(), prompt_words + len(params.continuation),
                            params)

    def _stream(self, words: list[str], prompt_words: int,
                params: GenerationParams) -> Iterator[TokenChunk]:
        # A continuation goes on after the words an interrupted run already gave.
        given = len(params.continuation)
        limit = params.max_tokens or len(words) - given
        scanner = StopScanner(list(params.stop))
        finish: FinishReason = "stop"
        generated = 0
        for index, word in enumerate(words):
            if index < given:
                continue
            if generated >= limit:
                finish = "length"
                break
            if self._options.crash_at and index + 1 >= self._options.crash_at:
                os._exit(3)
            time.sleep(self._options.delay)
            generated += 1
            text = scanner.feed(word if index == 0 else " " + word)
            if text:
                yield TokenChunk(text=text, token_ids=[index])
            if scanner.stopped:
                break
        yield TokenChunk(text=scanner.flush(), finish_reason=finish,
                         stop_sequence=scanner.matched,
                         usage=Usage(prompt_tokens=prompt_words, completion_tokens=generated))
