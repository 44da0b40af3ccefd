"""Ranks in threads, meeting in all_sum as over the ring: same digests pass, different
ones are refused on every rank, a rank without a digest is not held against the others."""

import hashlib
import threading

import pytest

from skulk.testing.queue_group import QueueGroup, shared_state
from skulk.worker.engines.mlx.weights_agreement import RanksDisagree, check_ranks_agree

ONE = hashlib.sha256(b"one copy").hexdigest()
OTHER = hashlib.sha256(b"another copy").hexdigest()


def verdicts(digests: list[str | None]) -> list[str]:
    """Each rank's outcome: 'ok' or the refusal's message."""
    shared = shared_state(len(digests))
    outcomes = [""] * len(digests)

    def rank(index: int) -> None:
        try:
            check_ranks_agree(QueueGroup(index, len(digests), shared), digests[index])
            outcomes[index] = "ok"
        except RanksDisagree as refusal:
            outcomes[index] = str(refusal)

    threads = [threading.Thread(target=rank, args=(i,)) for i in range(len(digests))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    return outcomes


def test_ranks_with_the_same_files_agree() -> None:
    assert verdicts([ONE, ONE, ONE]) == ["ok"] * 3


@pytest.mark.parametrize("digests", [[ONE, OTHER], [ONE, ONE, OTHER], [OTHER, None, ONE]])
def test_ranks_with_different_files_are_all_refused_naming_each_digest(
        digests: list[str | None]) -> None:
    outcomes = verdicts(digests)
    assert len(set(outcomes)) == 1 and "hold different weights" in outcomes[0]
    assert f"{ONE[:12]}" in outcomes[0] and f"{OTHER[:12]}" in outcomes[0]


def test_a_rank_that_cannot_tell_is_not_held_against_the_others() -> None:
    assert verdicts([ONE, None, ONE]) == ["ok"] * 3
