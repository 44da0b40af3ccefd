"""What a request that fails over mid-stream resumes from: the prompt plus every token the
client already has, with what is left of its budget. Pure; `failover.py` acts on it.

Greedy output is the uninterrupted run's: the new instance sees the same tokens and picks
the same next one. Sampled output goes on from the same prefix, but with a fresh sampler,
so it is not the text the first instance would have drawn. Constrained (JSON) output goes
on too: the new run's grammar matcher first consumes the tokens already sent.
"""

from dataclasses import dataclass, field

from skulk.shared.types.chunks import ErrorKind, TokenChunk, Usage
from skulk.shared.types.tasks import GenerationParams

# Failures another instance can recover from: a dead or hung runner, a node that left, a
# pipeline whose activations went bad. A bad request fails the same way anywhere.
RECOVERABLE: frozenset[ErrorKind] = frozenset(
    {"runner_failed", "timeout", "partitioned", "pipeline_corrupt"})


@dataclass
class Continuation:
    """The request as first asked, and the tokens handed to the client so far."""

    params: GenerationParams
    sent: list[int] = field(default_factory=list)
    # Tokens the running attempt was given as its continuation (its usage counts them as
    # prompt; the client counts them as completion).
    resumed_with: int = 0

    def deliver(self, chunk: TokenChunk) -> TokenChunk:
        """Note a chunk the client is about to get; the final one's usage is counted as if
        one instance had generated everything."""
        self.sent += chunk.token_ids
        usage = chunk.usage
        if usage is None or self.resumed_with == 0:
            return chunk
        moved = min(self.resumed_with, usage.prompt_tokens)
        fixed = usage.model_copy(update={
            "prompt_tokens": usage.prompt_tokens - moved,
            "completion_tokens": usage.completion_tokens + moved,
            "cached_tokens": min(usage.cached_tokens, usage.prompt_tokens - moved)})
        return chunk.model_copy(update={"usage": fixed})

    def resumed(self) -> GenerationParams | TokenChunk:
        """The parameters that go on from here, or the final chunk when the budget is
        spent already (the instance died between its last token and its final chunk)."""
        params = self.params
        if params.max_tokens is not None and len(self.sent) >= params.max_tokens:
            return TokenChunk(text="", finish_reason="length", usage=Usage(
                prompt_tokens=0, completion_tokens=len(self.sent)))
        self.resumed_with = len(self.sent)
        return params.model_copy(update={
            "continuation": [*params.continuation, *self.sent],
            "max_tokens": None if params.max_tokens is None
            else params.max_tokens - len(self.sent)})
