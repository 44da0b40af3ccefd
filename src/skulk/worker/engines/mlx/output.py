"""Turning one request's tokens into chunks: streaming text, stop sequences, the final chunk.

Only rank 0 does this (it is the rank whose runner talks to the user). It matches the
llama.cpp engine: a chunk whenever text becomes safe to emit, carrying the tokens it came
from; stop sequences are held back and cut; the last chunk has the finish reason and usage.
"""

from skulk.shared.types.chunks import FinishReason, TokenChunk, TokenLogprob, Usage
from skulk.worker.engines.mlx.mlx_api import Detokenizer
from skulk.worker.engines.stop_sequences import StopScanner


class StreamedText:
    def __init__(self, *, detokenizer: Detokenizer, stops: list[str],
                 eos_token_ids: frozenset[int], max_tokens: int, prompt_tokens: int,
                 cached_tokens: int) -> None:
        self._detokenizer = detokenizer
        self._scanner = StopScanner(list(stops))
        self._eos = eos_token_ids
        self._max_tokens = max_tokens
        self._prompt_tokens = prompt_tokens
        self._cached_tokens = cached_tokens
        self._held: list[int] = []  # tokens whose text is not out yet
        self._scored: list[TokenLogprob] = []  # their log probabilities, when asked for
        self.generated = 0
        self.finished: FinishReason | None = None
        self._drafter: str | None = None
        self._drafted = 0
        self._accepted = 0

    def note_speculation(self, drafter: str | None, drafted: int, accepted: int) -> None:
        """What drafting did for this request so far (reported in the final usage)."""
        self._drafter, self._drafted, self._accepted = drafter, drafted, accepted

    def is_end(self, token: int) -> bool:
        """Whether the token ends generation (it is then neither text nor scored)."""
        return token in self._eos

    def on_token(self, token: int, logprob: TokenLogprob | None = None) -> list[TokenChunk]:
        """The chunks one sampled token produces (with its log probability, when asked
        for); the last one is final when it ends."""
        if self.finished is not None:
            raise RuntimeError("a finished request was given another token")
        if token in self._eos:
            return [self._final("stop")]
        self.generated += 1
        self._held.append(token)
        if logprob is not None:
            self._scored.append(logprob)
        chunks = []
        text = self._scanner.feed(self._detokenizer.add(token))
        if text:
            chunks.append(TokenChunk(text=text, token_ids=self._held, logprobs=self._scored))
            self._held, self._scored = [], []
        if self._scanner.stopped:
            chunks.append(self._final("stop"))
        elif self.generated >= self._max_tokens:
            chunks.append(self._final("length"))
        return chunks

    def _final(self, reason: FinishReason) -> TokenChunk:
        self.finished = reason
        scanner = self._scanner
        tail = ""
        if not scanner.stopped:
            tail = scanner.feed(self._detokenizer.finish())
            tail += "" if scanner.stopped else scanner.flush()
        held = [] if scanner.stopped else self._held
        scored = [] if scanner.stopped else self._scored
        return TokenChunk(text=tail, token_ids=held, logprobs=scored, finish_reason=reason,
                          stop_sequence=scanner.matched,
                          usage=Usage(prompt_tokens=self._prompt_tokens,
                                      completion_tokens=self.generated,
                                      cached_tokens=self._cached_tokens,
                                      drafter=self._drafter if self._drafted else None,
                                      drafted_tokens=self._drafted,
                                      accepted_tokens=self._accepted))
