"""How the ranks of one instance agree, every step, on who is in the batch.

Pure functions over fixed-shape int32 vectors; the loop sums them across ranks with one
`all_sum` each, so every rank decides from the same numbers and no rank can diverge:

1. Control (summed): rank 0 proposes up to `MAX_PROPOSALS` requests it holds, oldest
   first, with their prompt length and the prefix it could reuse; for every slot of the
   roster, rank 0 marks the requests it saw finish and any rank marks the ones it was
   asked to cancel.
2. Reply (summed, only when the control carried proposals): every rank says, per
   proposal, whether it holds the request, refuses it (context overflow, invalid
   parameters), was asked to cancel it, tokenized it to a different length, or can reuse
   less of a cached prefix.

A request joins only once every rank holds it, so tasks may reach ranks at different times.
"""

import hashlib
from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt

from skulk.shared.types.ids import TaskId

MAX_PROPOSALS = 8
_PROPOSAL_FIELDS = 4  # key high, key low, prompt tokens, reusable prefix tokens
_SLOT_FIELDS = 2  # finished (rank 0), cancel asked (any rank)
_REPLY_FIELDS = 5  # holds, refuses, cancel asked, other prompt length, shorter reuse

Vector = npt.NDArray[np.int32]
TaskKey = tuple[int, int]
Outcome = Literal["wait", "join", "join_cold", "cancel", "refuse"]


def task_key(task_id: TaskId) -> TaskKey:
    """A task id as two positive int32 words (62 bits of its hash); never (0, 0)."""
    digest = int.from_bytes(hashlib.blake2b(task_id.encode(), digest_size=8).digest(), "big")
    return ((digest >> 31) & 0x7FFFFFFF) | 1, digest & 0x7FFFFFFF


@dataclass(frozen=True)
class Proposal:
    key: TaskKey
    prompt_tokens: int
    reuse: int


@dataclass(frozen=True)
class Control:
    """What every rank learns at the start of a step."""

    proposals: list[Proposal]
    finished: list[bool]  # per roster slot
    cancelled: list[bool]  # per roster slot


def control_size(slots: int) -> int:
    return MAX_PROPOSALS * _PROPOSAL_FIELDS + slots * _SLOT_FIELDS


def encode_control(proposals: list[Proposal], finished: set[int], cancelled: set[int],
                   slots: int) -> Vector:
    """This rank's share of the control vector (non-zero ranks pass no proposals and no
    finishes: only rank 0 decides those)."""
    if len(proposals) > MAX_PROPOSALS:
        raise ValueError(f"at most {MAX_PROPOSALS} proposals per step")
    table = np.zeros((MAX_PROPOSALS, _PROPOSAL_FIELDS), dtype=np.int32)
    for row, proposal in enumerate(proposals):
        table[row] = (*proposal.key, proposal.prompt_tokens, proposal.reuse)
    marks = np.zeros((slots, _SLOT_FIELDS), dtype=np.int32)
    for slot in finished:
        marks[slot, 0] = 1
    for slot in cancelled:
        marks[slot, 1] = 1
    return np.concatenate([table.reshape(-1), marks.reshape(-1)])


def decode_control(summed: Vector, slots: int) -> Control:
    split = MAX_PROPOSALS * _PROPOSAL_FIELDS
    table = summed[:split].reshape(MAX_PROPOSALS, _PROPOSAL_FIELDS)
    marks = summed[split:].reshape(slots, _SLOT_FIELDS)
    proposals = [Proposal((int(r[0]), int(r[1])), int(r[2]), int(r[3]))
                 for r in table if r[0] != 0]
    return Control(proposals, [bool(m[0]) for m in marks], [bool(m[1]) for m in marks])


@dataclass(frozen=True)
class Reply:
    """One rank's answer about one proposal."""

    holds: bool
    refuses: bool = False
    cancel_asked: bool = False
    other_length: bool = False
    shorter_reuse: bool = False


def encode_replies(replies: list[Reply]) -> Vector:
    table = np.zeros((MAX_PROPOSALS, _REPLY_FIELDS), dtype=np.int32)
    for row, reply in enumerate(replies):
        table[row] = (reply.holds, reply.refuses, reply.cancel_asked, reply.other_length,
                      reply.shorter_reuse)
    return table.reshape(-1)


def decide(proposals: list[Proposal], summed_replies: Vector, world_size: int,
           free_slots: int) -> list[Outcome]:
    """One outcome per proposal, the same on every rank given the same sums."""
    table = summed_replies.reshape(MAX_PROPOSALS, _REPLY_FIELDS)
    outcomes: list[Outcome] = []
    for row in range(len(proposals)):
        holds, refuses, cancel, other_length, shorter = (int(v) for v in table[row])
        if holds < world_size:
            outcomes.append("wait")
        elif cancel > 0:
            outcomes.append("cancel")
        elif refuses > 0 or other_length > 0:
            outcomes.append("refuse")
        elif free_slots <= 0:
            outcomes.append("wait")
        else:
            free_slots -= 1
            outcomes.append("join_cold" if shorter > 0 else "join")
    return outcomes
