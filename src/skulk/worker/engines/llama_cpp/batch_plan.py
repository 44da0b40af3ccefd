"""What goes in one step's batch: the next token of every decoding request first, then
chunks of the prompts still being prefilled, oldest first, as far as the budget goes (so a
long prompt is prefilled over several steps and never stalls the others' decoding)."""

from dataclasses import dataclass

from skulk.shared.types.ids import TaskId


@dataclass(frozen=True)
class BatchEntry:
    """One token of one sequence in a batch; `logits` asks for its next-token logits."""

    token: int
    position: int
    sequence: int
    logits: bool


@dataclass(frozen=True)
class Feed:
    """Tokens of one request waiting to enter its sequence's KV, from `position` on: one
    sampled token while decoding, the rest of the prompt while prefilling."""

    task_id: TaskId
    sequence: int
    position: int
    tokens: list[int]


@dataclass(frozen=True)
class Portion:
    """The part of a feed in this batch; `completes` when it is the whole rest of the
    feed, whose last token's logits then give the request its next token."""

    feed: Feed
    count: int
    logits_at: int | None  # the batch index of the completing token's logits

    @property
    def completes(self) -> bool:
        return self.logits_at is not None


def plan(feeds: list[Feed], budget: int, chunk: int) -> tuple[list[Portion], list[BatchEntry]]:
    """The portions of `feeds` (in priority order) that fit `budget` tokens, and the batch
    they make. A prompt goes in whole chunks of `chunk` tokens (its last one shorter): the
    same slices whatever else runs, so its KV comes out the same (llama.cpp's kernels
    round differently for differently sized slices). A feed that does not fit waits."""
    portions: list[Portion] = []
    entries: list[BatchEntry] = []
    for feed in feeds:
        count = min(len(feed.tokens), chunk)
        if count > budget - len(entries):
            continue
        completes = count == len(feed.tokens)
        for offset, token in enumerate(feed.tokens[:count]):
            last = offset == count - 1
            entries.append(BatchEntry(token=token, position=feed.position + offset,
                                      sequence=feed.sequence, logits=completes and last))
        portions.append(Portion(feed, count, len(entries) - 1 if completes else None))
    return portions, entries
