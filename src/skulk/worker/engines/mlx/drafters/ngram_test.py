"""Prompt lookup: no match, longest-suffix preference, most recent occurrence, overlap."""

from skulk.worker.engines.mlx.drafters.ngram import (
    DEFAULT_MAX_NGRAM,
    NGramDrafter,
    NGramSession,
    propose_from,
)


def propose(context: list[int], limit: int, *, min_ngram: int = 1,
            max_ngram: int = DEFAULT_MAX_NGRAM) -> tuple[int, ...]:
    session = NGramSession(max_ngram=max_ngram, min_ngram=min_ngram)
    return session.propose(context, limit).tokens


def test_no_match_proposes_nothing() -> None:
    assert propose([1, 2, 3, 4, 5], 4) == ()
    assert propose([1, 2, 3, 1], 4, min_ngram=2) == ()  # only a one-token match
    assert propose([7], 4) == ()
    assert propose([1, 2, 1, 2], 0) == ()


def test_copies_what_followed_the_earlier_occurrence() -> None:
    assert propose([5, 6, 7, 8, 9, 1, 5, 6], 3) == (7, 8, 9)


def test_the_longest_matching_suffix_wins_over_a_more_recent_shorter_one() -> None:
    # Suffix [1, 2, 3]: the 3-gram occurred at the start (followed by 10); the 1-gram
    # [3] occurs later, followed by 20. The longer match decides.
    context = [1, 2, 3, 10, 11, 9, 3, 20, 21, 1, 2, 3]
    assert propose(context, 2) == (10, 11)
    assert NGramSession(min_ngram=1).propose(context, 2).kind == 3
    # Limited to 1-grams, the most recent occurrence of [3] wins.
    assert propose(context, 2, max_ngram=1) == (20, 21)


def test_among_equal_suffixes_the_most_recent_occurrence_wins() -> None:
    assert propose([4, 5, 1, 4, 5, 2, 4, 5], 1) == (2,)


def test_a_match_overlapping_the_suffix_extends_the_pattern() -> None:
    # ... a b a b: the suffix [a, b] matched two tokens earlier; its continuation runs
    # into the suffix itself and keeps repeating.
    assert propose([9, 1, 2, 1, 2], 5) == (1, 2, 1, 2, 1)
    assert propose_from([7, 7], 1, 4) == (7, 7, 7, 7)


def test_the_index_follows_a_growing_context_and_rebuilds_on_a_different_one() -> None:
    session = NGramDrafter(min_ngram=1).open("r")
    assert session.propose([1, 2, 3], 2).tokens == ()
    assert session.propose([1, 2, 3, 1, 2], 2).tokens == (3, 1)
    assert session.propose([1, 2, 3, 1, 2, 3, 9, 1, 2, 3], 1).tokens == (9,)
    # An unrelated context (the same session reused) is indexed from scratch.
    assert session.propose([8, 8, 5, 8], 1).tokens == (5,)
    assert session.propose([5, 6], 1).tokens == ()
    session.close()
