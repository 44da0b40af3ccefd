"""The small int32 messages of an overlapped pipeline run (pipeline_run.py), pure numpy.

Between agreement points the ranks of a pipeline talk point to point only:

- a *header* goes down the pipeline (rank r to r + 1) ahead of each micro-batch's hidden
  states: `RUN` with the micro-batch's input tokens, or `FINAL` once rank 0 has drained
  the run, with every row's next input (the last sampled tokens), after which every rank
  is back at an agreement point;
- a *reply* goes from the last rank back to rank 0 (the ring's closing link) with the
  tokens it sampled for one micro-batch.

Both carry a flag word: a rank sets `WANTS_AGREEMENT` when it was asked to cancel one of
its rows, and rank 0, which sees every reply, then drains the run.
"""

from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt

Vector = npt.NDArray[np.int32]
Op = Literal["run", "final"]

WANTS_AGREEMENT = 1
_OPS: dict[Op, int] = {"run": 1, "final": 2}
_HEADER_FIELDS = 4  # op, flags, micro-batch, count
_REPLY_FIELDS = 3  # micro-batch, flags, count


class PipelineProtocolError(RuntimeError):
    """A message no correct peer sends: the ranks have lost step with each other."""


@dataclass(frozen=True)
class Header:
    op: Op
    micro_batch: int
    tokens: tuple[int, ...]  # run: the micro-batch's inputs; final: every row's next input
    flags: int = 0


@dataclass(frozen=True)
class Reply:
    micro_batch: int
    tokens: tuple[int, ...]  # sampled, one per row of the micro-batch
    flags: int = 0


def header_size(slots: int) -> int:
    return _HEADER_FIELDS + slots


def reply_size(slots: int) -> int:
    return _REPLY_FIELDS + slots


def _padded(tokens: tuple[int, ...], slots: int) -> list[int]:
    if len(tokens) > slots:
        raise ValueError(f"{len(tokens)} tokens do not fit a message of {slots} slots")
    return [*tokens, *[0] * (slots - len(tokens))]


def encode_header(header: Header, slots: int) -> Vector:
    fields = [_OPS[header.op], header.flags, header.micro_batch, len(header.tokens)]
    return np.array([*fields, *_padded(header.tokens, slots)], dtype=np.int32)


def decode_header(vector: Vector, slots: int) -> Header:
    if vector.shape != (header_size(slots),):
        raise PipelineProtocolError(f"a header of shape {vector.shape}")
    op_code, flags, micro_batch, count = (int(v) for v in vector[:_HEADER_FIELDS])
    ops = {code: op for op, code in _OPS.items()}
    if op_code not in ops or not 0 <= count <= slots:
        raise PipelineProtocolError(f"a header with op {op_code} and {count} tokens")
    tokens = tuple(int(t) for t in vector[_HEADER_FIELDS: _HEADER_FIELDS + count])
    return Header(ops[op_code], micro_batch, tokens, flags)


def encode_reply(reply: Reply, slots: int) -> Vector:
    fields = [reply.micro_batch, reply.flags, len(reply.tokens)]
    return np.array([*fields, *_padded(reply.tokens, slots)], dtype=np.int32)


def decode_reply(vector: Vector, slots: int) -> Reply:
    if vector.shape != (reply_size(slots),):
        raise PipelineProtocolError(f"a reply of shape {vector.shape}")
    micro_batch, flags, count = (int(v) for v in vector[:_REPLY_FIELDS])
    if not 0 <= count <= slots:
        raise PipelineProtocolError(f"a reply with {count} tokens")
    tokens = tuple(int(t) for t in vector[_REPLY_FIELDS: _REPLY_FIELDS + count])
    return Reply(micro_batch, tokens, flags)
