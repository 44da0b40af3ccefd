"""Chunks that queued up behind each other leave as one.

When the node falls behind its runner (several requests decoding at once, a busy machine),
the supervisor finds several chunks of a request waiting at once; publishing, signing,
reordering and rendering each separately costs the node CPU the runner's compute threads
need. Merging them costs nothing when the node keeps up (one chunk waits at a time) and
changes no text, token or count. A step's plain tokens come packed (`TokensProduced`) and
are unpacked straight into these runs, so no chunk is built per request and step.
"""

from dataclasses import dataclass, field

from skulk.shared.types.chunks import TokenChunk, TokenLogprob
from skulk.shared.types.ids import CommandId, TaskId
from skulk.worker.runner import messages
from skulk.worker.runner.built import built
from skulk.worker.runner.messages import FromRunner


def mergeable(first: TokenChunk) -> bool:
    return first.finish_reason is None and first.embeddings is None and not first.spans


def packable(chunk: TokenChunk) -> bool:
    """A chunk the runner may send as a plain piece of `TokensProduced`."""
    return mergeable(chunk) and not chunk.logprobs and chunk.usage is None \
        and chunk.stop_sequence is None


def plain_token_chunk(text: str, token_ids: list[int],
                      logprobs: list[TokenLogprob] | None = None) -> TokenChunk:
    """A plain piece's chunk (not its request's last: no usage, ending or spans)."""
    # Built from checked parts, not validated again: this runs per request and step.
    return built(TokenChunk, {
        "kind": "token", "text": text, "token_ids": token_ids, "finish_reason": None,
        "usage": None, "stop_sequence": None, "logprobs": [] if logprobs is None else logprobs,
        "embeddings": None, "spans": []})


def merged(first: TokenChunk, second: TokenChunk) -> TokenChunk:
    """`second` with `first`'s text, tokens and log probabilities before its own."""
    return second.model_copy(update={"text": first.text + second.text,
                                     "token_ids": first.token_ids + second.token_ids,
                                     "logprobs": first.logprobs + second.logprobs})


def merged_run(run: list[TokenChunk]) -> TokenChunk:
    """The last chunk of `run` with the text, tokens and log probabilities of all of them,
    in order (each chunk but the last `mergeable`)."""
    return run[-1].model_copy(update={
        "text": "".join(chunk.text for chunk in run),
        "token_ids": [token for chunk in run for token in chunk.token_ids],
        "logprobs": [entry for chunk in run for entry in chunk.logprobs]})


@dataclass
class _Run:
    """One request's consecutive token output in a batch, ended by at most one chunk that
    cannot grow (its last, an embedding)."""

    task_id: TaskId
    command_id: CommandId
    texts: list[str] = field(default_factory=list)
    token_ids: list[int] = field(default_factory=list)
    logprobs: list[TokenLogprob] = field(default_factory=list)
    closing: TokenChunk | None = None
    only: messages.ChunkProduced | None = None  # the run is this one message, unchanged

    def add(self, text: str, token_ids: list[int], logprobs: list[TokenLogprob]) -> None:
        self.texts.append(text)
        self.token_ids += token_ids
        self.logprobs += logprobs

    def message(self) -> messages.ChunkProduced:
        if self.only is not None:
            return self.only
        text = self.texts[0] if len(self.texts) == 1 else "".join(self.texts)
        chunk = self.closing.model_copy(update={
            "text": text, "token_ids": self.token_ids, "logprobs": self.logprobs}) \
            if self.closing is not None else plain_token_chunk(text, self.token_ids,
                                                               self.logprobs)
        return built(messages.ChunkProduced, {"kind": "chunk", "task_id": self.task_id,
                                              "command_id": self.command_id, "chunk": chunk})


class _Runs:
    """The batch in order, each request's open run growing in its first place."""

    def __init__(self) -> None:
        self.out: list[FromRunner | _Run] = []
        self.open: dict[TaskId, _Run] = {}

    def run_of(self, task_id: TaskId, command_id: CommandId) -> _Run:
        run = self.open.get(task_id)
        if run is None:
            run = self.open[task_id] = _Run(task_id, command_id)
            self.out.append(run)
        else:
            run.only = None
        return run

    def chunk(self, message: messages.ChunkProduced, chunk: TokenChunk) -> None:
        fresh = message.task_id not in self.open
        run = self.run_of(message.task_id, message.command_id)
        run.add(chunk.text, chunk.token_ids, chunk.logprobs)
        if fresh:
            run.only = message
        if not mergeable(chunk):
            run.closing = chunk
            del self.open[message.task_id]

    def other(self, message: FromRunner, task_id: TaskId | None) -> None:
        if task_id is not None:
            self.open.pop(task_id, None)
        self.out.append(message)

    def messages(self) -> list[FromRunner]:
        return [item.message() if isinstance(item, _Run) else item for item in self.out]


def coalesce(batch: list[FromRunner]) -> list[FromRunner]:
    """The batch with each run of a request's token chunks (and packed pieces) merged into
    the first one's place; any other message about a request (its end) keeps its order
    after them. No `TokensProduced` is left in what it returns."""
    runs = _Runs()
    for message in batch:
        match message:
            case messages.TokensProduced(pieces=pieces):
                for task_id, command_id, text, token_ids in pieces:
                    runs.run_of(task_id, command_id).add(text, token_ids, [])
            case messages.ChunkProduced(chunk=TokenChunk() as chunk):
                runs.chunk(message, chunk)
            case messages.ChunkProduced(task_id=task_id) | messages.TaskEnded(task_id=task_id) \
                    | messages.TaskAcknowledged(task_id=task_id):
                runs.other(message, task_id)
            case _:
                runs.other(message, None)
    return runs.messages()
