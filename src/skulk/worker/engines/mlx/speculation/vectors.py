"""The fixed-shape int32 vectors the ranks of an instance exchange in a drafting round.

Only the deciding rank drafts and judges; it fills these and every other rank passes
zeros to the same `all_sum`, so every rank learns the same numbers and applies the same
cache edits. The shapes depend only on the slot count and `MAX_DRAFT`, never on what was
drafted, so the collective schedule cannot diverge between ranks.

- drafts, per slot: [count, token_1 .. token_MAX_DRAFT];
- verdicts, per slot: [accepted, next token].
"""

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from skulk.worker.engines.mlx.speculation.accept import Verdict

MAX_DRAFT = 16  # the most tokens one round may propose, for every request and drafter

Vector = npt.NDArray[np.int32]


def encode_drafts(drafts: Sequence[Sequence[int]], slots: int) -> Vector:
    if len(drafts) > slots:
        raise ValueError(f"{len(drafts)} rows of drafts for {slots} slots")
    table = np.zeros((slots, 1 + MAX_DRAFT), dtype=np.int32)
    for row, tokens in enumerate(drafts):
        if len(tokens) > MAX_DRAFT:
            raise ValueError(f"a draft of {len(tokens)} tokens is over {MAX_DRAFT}")
        table[row, 0] = len(tokens)
        table[row, 1: 1 + len(tokens)] = tokens
    return table.reshape(-1)


def decode_drafts(summed: Vector, rows: int) -> list[list[int]]:
    table = summed.reshape(-1, 1 + MAX_DRAFT)
    return [[int(t) for t in table[row, 1: 1 + int(table[row, 0])]] for row in range(rows)]


def encode_verdicts(verdicts: Sequence[Verdict], slots: int) -> Vector:
    table = np.zeros((slots, 2), dtype=np.int32)
    for row, verdict in enumerate(verdicts):
        table[row] = (verdict.accepted, verdict.next_token)
    return table.reshape(-1)


def decode_verdicts(summed: Vector, rows: int) -> list[Verdict]:
    table = summed.reshape(-1, 2)
    return [Verdict(int(table[row, 0]), int(table[row, 1])) for row in range(rows)]
