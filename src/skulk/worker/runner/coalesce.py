"""Chunks that queued up behind each other leave as one.

When the node falls behind its runner (several requests decoding at once, a busy machine),
the supervisor finds several chunks of a request waiting at once; publishing, signing,
reordering and rendering each separately costs the node CPU the runner's compute threads
need. Merging them costs nothing when the node keeps up (one chunk waits at a time) and
changes no text, token or count.
"""

from skulk.shared.types.chunks import TokenChunk
from skulk.shared.types.ids import TaskId
from skulk.worker.runner import messages
from skulk.worker.runner.messages import FromRunner


def mergeable(first: TokenChunk) -> bool:
    return first.finish_reason is None and first.embeddings is None and not first.spans


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


def coalesce(batch: list[FromRunner]) -> list[FromRunner]:
    """The batch with each run of a request's token chunks merged into the first one's
    place; any other message about a request (its end) keeps its order after them."""
    out: list[FromRunner] = []
    open_at: dict[TaskId, int] = {}  # a request's last chunk that may still grow
    for message in batch:
        match message:
            case messages.ChunkProduced(task_id=task_id, chunk=TokenChunk() as chunk):
                index = open_at.get(task_id, -1)
                previous = out[index] if index >= 0 else None
                if isinstance(previous, messages.ChunkProduced) and \
                        isinstance(previous.chunk, TokenChunk) and mergeable(previous.chunk):
                    out[index] = previous.model_copy(
                        update={"chunk": merged(previous.chunk, chunk)})
                else:
                    open_at[task_id] = len(out)
                    out.append(message)
            case messages.ChunkProduced(task_id=task_id) | messages.TaskEnded(task_id=task_id) \
                    | messages.TaskAcknowledged(task_id=task_id):
                open_at.pop(task_id, None)
                out.append(message)
            case _:
                out.append(message)
    return out
