"""An overlapped pipeline run: the decode steps between two agreement points, with every
rank busy on a different micro-batch and no collective among all ranks.

Rank 0 sends a RUN header (the micro-batch's input tokens) and the micro-batch's hidden
states down the pipeline; each following rank checks the header's turn, passes it on and
runs its layers; the last rank samples and replies to rank 0 over the ring's closing
link; rank 0 commits the tokens (and streams them) and launches that micro-batch's next
step at once, while the other micro-batches are still on their way. Once rank 0 drains
the run (pipeline_schedule.py says when), it sends FINAL with every row's next input, and
every rank is back at the same rows, the same tokens, the same caches: an agreement
point, where the loop's collectives decide joins, leaves and cancels as before.

A middle rank learns the tokens from the headers (a micro-batch's inputs are the tokens
of its step before, FINAL brings the last ones), so its rows stay the same as everyone's
and its prefix cache keys stay right. One `advance` does one unit of work: rank 0 takes
one reply (and launches the next step), any other rank takes one header.
"""

from dataclasses import dataclass, field
from typing import Protocol

import mlx.core as mx
import numpy as np

from skulk.worker.engines.mlx import mlx_api
from skulk.worker.engines.mlx.pipeline_schedule import FollowerSchedule, LeaderSchedule
from skulk.worker.engines.mlx.pipeline_wire import (
    WANTS_AGREEMENT,
    Header,
    PipelineProtocolError,
    Reply,
    decode_header,
    decode_reply,
    encode_header,
    encode_reply,
    header_size,
    reply_size,
)
from skulk.worker.engines.mlx.shard import ModelShard
from skulk.worker.engines.protocol import EngineEvent

# The non-empty micro-batches of the batch: their rows (loop order) and their cache.
Parts = list[tuple[list[int], list[mlx_api.LayerCache]]]


class RunHost(Protocol):
    """What a run needs of the generation loop's rows."""

    def run_inputs(self, rows: list[int]) -> tuple[int, ...]:
        """The next input token of each of these rows."""
        ...

    def run_decide(self, rows: list[int], logits: mx.array) -> list[int]:
        ...

    def run_carry_scores(self, rows: list[int]) -> None:
        """The last rank sends rank 0 the log probabilities of these rows' new tokens
        (score_carrier.py), right after their reply; rank 0 receives them."""
        ...

    def run_commit(self, row: int, token: int, events: list[EngineEvent]) -> None:
        """A row's next token is known: commit it (rank 0 also streams it)."""
        ...

    def run_wants_agreement(self) -> bool:
        """This rank needs an agreement point (rank 0: a finish, a cancel or a join;
        others: a cancel asked here)."""
        ...


@dataclass
class PipelineRun:
    shard: ModelShard
    parts: Parts
    slots: int
    host: RunHost
    leader: LeaderSchedule | None = field(init=False, default=None)
    follower: FollowerSchedule | None = field(init=False, default=None)
    done: bool = False
    steps: int = 0  # micro-batch steps this rank ran

    def __post_init__(self) -> None:
        if self.shard.group.rank == 0:
            self.leader = LeaderSchedule(len(self.parts))
        else:
            self.follower = FollowerSchedule(len(self.parts))

    @property
    def _rank(self) -> int:
        return self.shard.group.rank

    @property
    def _last(self) -> int:
        return self.shard.group.size - 1

    @property
    def _all_rows(self) -> list[int]:
        return sorted(row for rows, _ in self.parts for row in rows)

    def start(self) -> None:
        """Rank 0 launches every micro-batch; the others wait for their first header."""
        if self.leader is not None:
            for micro_batch in self.leader.start():
                self._launch(micro_batch)

    def advance(self, events: list[EngineEvent]) -> None:
        if self.done:
            raise RuntimeError("the run is over")
        if self.leader is not None:
            self._leader_turn(self.leader, events)
        else:
            assert self.follower is not None
            self._follower_turn(self.follower, events)

    def _send_header(self, header: Header) -> None:
        vector = encode_header(header, self.slots)
        self.shard.group.send(mx.array(vector, dtype=mx.int32), self._rank + 1)

    def _forward(self, micro_batch: int, tokens: tuple[int, ...]) -> mx.array | None:
        _, cache = self.parts[micro_batch]
        logits = self.shard.forward(mx.array([[t] for t in tokens], dtype=mx.int32), cache)
        if logits is None:
            mlx_api.evaluate_cache(cache)
        self.steps += 1
        return logits

    def _launch(self, micro_batch: int) -> None:
        rows, _ = self.parts[micro_batch]
        tokens = self.host.run_inputs(rows)
        self._send_header(Header("run", micro_batch, tokens))
        self._forward(micro_batch, tokens)  # embeds, runs rank 0's layers, sends them on

    def _leader_turn(self, leader: LeaderSchedule, events: list[EngineEvent]) -> None:
        received = self.shard.group.recv((reply_size(self.slots),), mx.int32, self._last)
        reply = decode_reply(np.array(received, dtype=np.int32), self.slots)
        if reply.micro_batch != leader.expected:
            raise PipelineProtocolError(
                f"a reply for micro-batch {reply.micro_batch} while {leader.expected} was due")
        rows, _ = self.parts[reply.micro_batch]
        if len(reply.tokens) != len(rows):
            raise PipelineProtocolError(
                f"{len(reply.tokens)} tokens for a micro-batch of {len(rows)} rows")
        self.host.run_carry_scores(rows)
        for row, token in zip(rows, reply.tokens, strict=True):
            self.host.run_commit(row, token, events)
        wants = bool(reply.flags & WANTS_AGREEMENT) or self.host.run_wants_agreement()
        if leader.on_reply(reply.micro_batch, wants):
            self._launch(reply.micro_batch)
        if leader.drained:
            self._send_header(Header("final", 0, self.host.run_inputs(self._all_rows)))
            self.done = True

    def _follower_turn(self, follower: FollowerSchedule, events: list[EngineEvent]) -> None:
        received = self.shard.group.recv((header_size(self.slots),), mx.int32, self._rank - 1)
        header = decode_header(np.array(received, dtype=np.int32), self.slots)
        flags = header.flags | (WANTS_AGREEMENT if self.host.run_wants_agreement() else 0)
        passed_on = Header(header.op, header.micro_batch, header.tokens, flags)
        if header.op == "final":
            follower.on_final()
            if self._rank != self._last:
                self._send_header(passed_on)
            self._take_tokens(self._all_rows, header.tokens, news=self._rank != self._last,
                              events=events)
            self.done = True
            return
        news = follower.on_run(header.micro_batch)
        rows, _ = self.parts[header.micro_batch]
        if self._rank != self._last:
            self._take_tokens(rows, header.tokens, news, events)
            self._send_header(passed_on)
            self._forward(header.micro_batch, header.tokens)
            return
        # The last rank committed its own samples: the inputs must be exactly those.
        self._take_tokens(rows, header.tokens, news=False, events=events)
        logits = self._forward(header.micro_batch, header.tokens)
        if logits is None:
            raise RuntimeError("the deciding shard returned no logits")
        chosen = self.host.run_decide(rows, logits[:, -1, :])
        reply = Reply(header.micro_batch, tuple(chosen), flags)
        self.shard.group.send(mx.array(encode_reply(reply, self.slots), dtype=mx.int32), 0)
        self.host.run_carry_scores(rows)
        for row, token in zip(rows, chosen, strict=True):
            self.host.run_commit(row, token, events)

    def _take_tokens(self, rows: list[int], tokens: tuple[int, ...], news: bool,
                     events: list[EngineEvent]) -> None:
        """Commit tokens that are news here; otherwise check they are what this rank has."""
        if len(tokens) != len(rows):
            raise PipelineProtocolError(f"{len(tokens)} tokens for {len(rows)} rows")
        if news:
            for row, token in zip(rows, tokens, strict=True):
                self.host.run_commit(row, token, events)
        elif tokens != self.host.run_inputs(rows):
            raise PipelineProtocolError(
                f"rank {self._rank} holds inputs {self.host.run_inputs(rows)} for rows "
                f"{rows}, rank 0 sent {tokens}")
