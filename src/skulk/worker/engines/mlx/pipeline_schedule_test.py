from collections import deque

import pytest

from skulk.worker.engines.mlx.pipeline_schedule import (
    FollowerSchedule,
    LeaderSchedule,
    may_overlap,
)
from skulk.worker.engines.mlx.pipeline_wire import PipelineProtocolError


@pytest.mark.parametrize(("micro_batches", "world", "rows", "prefilling", "speculation",
                          "overlap"), [
    (2, 2, 4, 0, False, True),
    (2, 2, 1, 0, False, True),  # one request alone still goes round, without collectives
    (2, 2, 1, 0, True, False),  # a lone drafting row keeps its speculative rounds
    (2, 2, 2, 0, True, True),
    (2, 2, 4, 1, False, False),  # a prompt is still prefilling
    (1, 2, 4, 0, False, False),  # the option is off
    (2, 1, 4, 0, False, False),  # one node
    (2, 2, 0, 0, False, False),
])
def test_when_a_run_starts(micro_batches: int, world: int, rows: int, prefilling: int,
                           speculation: bool, overlap: bool) -> None:
    assert may_overlap(micro_batches, world, rows, prefilling, speculation) is overlap


def simulate(micro_batches: int, drain_at_reply: int | None, agree_every: int = 100
             ) -> tuple[list[int], list[bool], LeaderSchedule, FollowerSchedule]:
    """Rank 0 and a follower over a FIFO link (the last rank answers in arrival order):
    the launch order the follower saw and its commit decisions."""
    leader = LeaderSchedule(micro_batches, agree_every=agree_every)
    follower = FollowerSchedule(micro_batches)
    link: deque[int] = deque(leader.start())
    seen, news = [], []
    replies = 0
    while link:
        micro_batch = link.popleft()
        seen.append(micro_batch)
        news.append(follower.on_run(micro_batch))
        replies += 1
        if leader.on_reply(micro_batch, wants_agreement=replies == drain_at_reply):
            link.append(micro_batch)
    assert leader.drained
    follower.on_final()
    return seen, news, leader, follower


def test_micro_batches_go_round_in_turn_until_the_run_drains() -> None:
    seen, news, leader, _ = simulate(2, drain_at_reply=5)
    # Drained at the fifth reply: the sixth (launched before) still comes back.
    assert seen == [0, 1, 0, 1, 0, 1]
    assert news == [False, False, True, True, True, True]
    assert leader.replies == 6


def test_a_run_drains_by_itself_after_agree_every_replies() -> None:
    seen, _, leader, _ = simulate(3, drain_at_reply=None, agree_every=7)
    assert seen == [0, 1, 2, 0, 1, 2, 0, 1, 2]
    assert leader.replies == 9


def test_one_micro_batch_goes_through_the_ranks_in_turn() -> None:
    seen, news, _, _ = simulate(1, drain_at_reply=3)
    assert seen == [0, 0, 0]
    assert news == [False, True, True]


def test_out_of_turn_messages_are_protocol_errors() -> None:
    leader = LeaderSchedule(2)
    leader.start()
    with pytest.raises(PipelineProtocolError, match="micro-batch 1 while 0"):
        leader.on_reply(1, wants_agreement=False)
    follower = FollowerSchedule(2)
    follower.on_run(0)
    with pytest.raises(PipelineProtocolError, match="micro-batch 0 came down"):
        follower.on_run(0)
    with pytest.raises(PipelineProtocolError, match="FINAL after 1 of 2"):
        follower.on_final()
    with pytest.raises(PipelineProtocolError, match="no micro-batch"):
        assert LeaderSchedule(1).expected is None
