"""The agreement arithmetic, with the all_sum done by hand over 2 and 3 ranks."""

import numpy as np

from skulk.shared.types.ids import TaskId
from skulk.worker.engines.mlx.membership import (
    MAX_PROPOSALS,
    Proposal,
    Reply,
    decide,
    decode_control,
    encode_control,
    encode_replies,
    task_key,
)


def test_task_keys_are_stable_nonzero_and_distinct() -> None:
    keys = {task_key(TaskId(f"task-{i}")) for i in range(2000)}
    assert len(keys) == 2000
    assert all(high > 0 and 0 <= low < 2**31 for high, low in keys)
    assert task_key(TaskId("abc")) == task_key(TaskId("abc"))


def test_control_sums_rank_zero_proposals_with_every_ranks_cancels() -> None:
    proposals = [Proposal(task_key(TaskId("a")), 12, 5), Proposal(task_key(TaskId("b")), 3, 0)]
    rank0 = encode_control(proposals, finished={1}, cancelled=set(), slots=4)
    rank1 = encode_control([], finished=set(), cancelled={2}, slots=4)
    rank2 = encode_control([], finished=set(), cancelled={2, 3}, slots=4)
    control = decode_control(rank0 + rank1 + rank2, slots=4)
    assert control.proposals == proposals
    assert control.finished == [False, True, False, False]
    assert control.cancelled == [False, False, True, True]


def test_a_request_joins_only_when_every_rank_holds_it() -> None:
    proposals = [Proposal(task_key(TaskId("a")), 12, 0), Proposal(task_key(TaskId("b")), 3, 0)]
    rank0 = encode_replies([Reply(holds=True), Reply(holds=True)])
    rank1 = encode_replies([Reply(holds=True), Reply(holds=False)])
    assert decide(proposals, rank0 + rank1, world_size=2, free_slots=8) == ["join", "wait"]


def test_cancel_refusal_and_mismatches_are_decided_identically() -> None:
    proposals = [Proposal(task_key(TaskId(name)), 10, 4) for name in "abcde"]
    rank0 = encode_replies([Reply(True), Reply(True, refuses=True), Reply(True),
                            Reply(True), Reply(True)])
    rank1 = encode_replies([Reply(True, cancel_asked=True), Reply(True),
                            Reply(True, other_length=True), Reply(True, shorter_reuse=True),
                            Reply(True)])
    outcomes = decide(proposals, rank0 + rank1, world_size=2, free_slots=8)
    assert outcomes == ["cancel", "refuse", "refuse", "join_cold", "join"]


def test_joins_stop_at_the_free_slots_but_cancels_still_go_through() -> None:
    proposals = [Proposal(task_key(TaskId(name)), 5, 0) for name in "abc"]
    replies = encode_replies([Reply(True), Reply(True), Reply(True, cancel_asked=True)])
    assert decide(proposals, replies, world_size=1, free_slots=1) == ["join", "wait", "cancel"]


def test_vectors_have_a_fixed_shape_whatever_the_content() -> None:
    empty = encode_control([], set(), set(), slots=8)
    full = encode_control([Proposal(task_key(TaskId(str(i))), 1, 0) for i in range(MAX_PROPOSALS)],
                          set(range(8)), set(range(8)), slots=8)
    assert empty.shape == full.shape and empty.dtype == np.int32
    assert encode_replies([]).shape == encode_replies([Reply(True)] * MAX_PROPOSALS).shape
