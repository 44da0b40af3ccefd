"""One request's tokens turned into the chunks the user sees: incremental UTF-8 decoding
(a character split over tokens waits for its last byte; one the answer ends inside is
dropped), stop sequences held back until they cannot be one, and each token's log
probability from the logits it was drawn from."""

from skulk.shared.types.chunks import FinishReason, TokenChunk, TokenLogprob, Usage
from skulk.worker.engines.stop_sequences import StopScanner
from skulk.worker.engines.utf8_text import Utf8Pieces
from skulk.worker.runner.coalesce import plain_token_chunk


class TokenText:
    """Feed a request's tokens one at a time; get back chunks ready to send."""

    def __init__(self, stops: list[str]) -> None:
        self._pieces = Utf8Pieces()
        self._scanner = StopScanner(list(stops))
        self._held: list[int] = []  # tokens whose text the scanner still holds back
        self._scored: list[TokenLogprob] = []  # their log probabilities, when asked for
        self.generated = 0

    @property
    def stopped(self) -> bool:
        """A stop sequence appeared: nothing more is sent but the final chunk."""
        return self._scanner.stopped

    def add(self, token: int, piece: bytes, logprob: TokenLogprob | None) -> TokenChunk | None:
        """A generated token (never an end-of-generation one); the chunk to send, if its
        text can be sent yet."""
        self.generated += 1
        self._held.append(token)
        if logprob is not None:
            self._scored.append(logprob)
        text = self._scanner.feed(self._pieces.add(piece))
        if not text:
            return None
        chunk = plain_token_chunk(text, self._held, self._scored)
        self._held, self._scored = [], []
        return chunk

    def finish(self, reason: FinishReason, prompt_tokens: int, cached: int) -> TokenChunk:
        """The last chunk: whatever text was held back (none after a stop sequence),
        the finish reason and the token counts."""
        self._pieces.end()
        tail = "" if self.stopped else self._scanner.flush()
        stopped = self.stopped
        return TokenChunk(text=tail, token_ids=[] if stopped else self._held,
                          logprobs=[] if stopped else self._scored,
                          finish_reason="stop" if stopped else reason,
                          stop_sequence=self._scanner.matched,
                          usage=Usage(prompt_tokens=prompt_tokens,
                                      completion_tokens=self.generated, cached_tokens=cached))
