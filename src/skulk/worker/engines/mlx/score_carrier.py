"""Log probabilities from the rank that decides tokens to rank 0, which streams them.

A whole model and a split by heads decide on rank 0, so their scores are already there.
A split by layers decides on its last rank: after each step's tokens are known on both
ends, the last rank sends rank 0 the scores of the rows that asked for log probabilities,
point to point over the ring's closing link (the middle ranks take no part), and rank 0
names their tokens with its own vocabulary. Both ends know which rows asked, for how
many alternatives and how many tokens each committed, so the message's size needs no
agreement of its own; a step in which no row asked sends nothing.

Log probabilities travel as their float32 bits in int32: the corruption guard treats any
non-finite value in a sent array as a corrupt hop, and an int is always finite.
"""

from collections.abc import Sequence

import mlx.core as mx
import numpy as np
import numpy.typing as npt

from skulk.worker.engines.mlx.batch_rows import Row
from skulk.worker.engines.mlx.shard import ModelShard
from skulk.worker.engines.token_logprobs import Scored

Vector = npt.NDArray[np.int32]


def wire_size(tops: Sequence[int], per_row: int) -> int:
    """Length of the message for rows asking for `tops` alternatives, `per_row` tokens
    each at most: per row a count, then per token its id, bits and the alternatives'."""
    return sum(1 + per_row * (2 + 2 * top) for top in tops)


def _bits(value: float) -> int:
    return int(np.array([value], dtype=np.float32).view(np.int32)[0])


def _value(bits: int) -> float:
    return float(np.array([bits], dtype=np.int32).view(np.float32)[0])


def encode_scores(entries: Sequence[Sequence[Scored]], tops: Sequence[int],
                  per_row: int) -> Vector:
    vector = np.zeros(wire_size(tops, per_row), dtype=np.int32)
    at = 0
    for row_entries, top in zip(entries, tops, strict=True):
        if len(row_entries) > per_row:
            raise ValueError(f"{len(row_entries)} scored tokens for a row of {per_row}")
        vector[at] = len(row_entries)
        for index, entry in enumerate(row_entries):
            slot = at + 1 + index * (2 + 2 * top)
            if len(entry.top) != top:
                raise ValueError(f"{len(entry.top)} alternatives where {top} were asked")
            vector[slot: slot + 2] = (entry.token, _bits(entry.logprob))
            for place, (candidate, logprob) in enumerate(entry.top):
                vector[slot + 2 + 2 * place: slot + 4 + 2 * place] = (candidate,
                                                                     _bits(logprob))
        at += 1 + per_row * (2 + 2 * top)
    return vector


def decode_scores(vector: Vector, tops: Sequence[int], per_row: int) -> list[list[Scored]]:
    if len(vector) != wire_size(tops, per_row):
        raise ValueError(f"a scores message of {len(vector)} where "
                         f"{wire_size(tops, per_row)} was due")
    decoded: list[list[Scored]] = []
    at = 0
    for top in tops:
        count = int(vector[at])
        if not 0 <= count <= per_row:
            raise ValueError(f"{count} scored tokens for a row of {per_row}")
        row_entries = []
        for index in range(count):
            slot = at + 1 + index * (2 + 2 * top)
            alternatives = tuple(
                (int(vector[slot + 2 + 2 * place]), _value(int(vector[slot + 3 + 2 * place])))
                for place in range(top))
            row_entries.append(Scored(int(vector[slot]), _value(int(vector[slot + 1])),
                                      alternatives))
        decoded.append(row_entries)
        at += 1 + per_row * (2 + 2 * top)
    return decoded


def carry_scores(shard: ModelShard, rows: Sequence[Row], per_row: int) -> None:
    """Move the scores of `rows` (each committed at most `per_row` tokens this step) from
    a pipeline's last rank to rank 0; a no-op where rank 0 decides or nobody asked. Called
    by the last rank and rank 0 at the same point of the same step."""
    group = shard.group
    asking = [row for row in rows if row.request.params.logprobs is not None]
    if group.size == 1 or not asking:
        return
    tops = [row.request.params.logprobs or 0 for row in asking]
    if shard.decides and group.rank != 0:
        vector = encode_scores([row.scored for row in asking], tops, per_row)
        for row in asking:
            row.scored.clear()
        group.send(mx.array(vector), 0)
    elif group.rank == 0 and not shard.decides:
        received = group.recv((wire_size(tops, per_row),), mx.int32, group.size - 1)
        carried = decode_scores(np.array(received, dtype=np.int32), tops, per_row)
        for row, entries in zip(asking, carried, strict=True):
            row.scored.extend(entries)
