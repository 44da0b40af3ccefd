import pytest

from skulk.routing.keys import check_chunk, key_matches


def test_exact_and_single_chunk_wildcards() -> None:
    assert key_matches("a/b", "a/b")
    assert not key_matches("a/b", "a/c")
    assert not key_matches("a/b", "a/b/c")
    assert not key_matches("a/b/c", "a/b")
    assert key_matches("a/*", "a/b")
    assert key_matches("*/b", "a/b")
    assert not key_matches("a/*", "a/b/c")
    assert not key_matches("a/*", "a")


def test_double_star_matches_zero_or_more_chunks() -> None:
    assert key_matches("a/**", "a")
    assert key_matches("a/**", "a/b/c")
    assert key_matches("**", "a/b")
    assert key_matches("**/c", "a/b/c")
    assert key_matches("a/**/z", "a/z")
    assert key_matches("a/**/z", "a/b/c/z")
    assert not key_matches("a/**/z", "a/b/c")
    assert key_matches("a/**/*/z", "a/b/z")
    assert not key_matches("a/**/*/z", "a/z")
    assert key_matches("a/**/**", "a")


def test_a_prefix_is_not_a_chunk_match() -> None:
    assert not key_matches("skulk/ns/data/node-a", "skulk/ns/data/node-ab")
    assert not key_matches("skulk/ns/data", "skulk/ns/data2")


@pytest.mark.parametrize("chunk", ["", "a/b", "*", "**", "$*", "a?", "a#"])
def test_check_chunk_rejects_what_cannot_be_one_concrete_chunk(chunk: str) -> None:
    with pytest.raises(ValueError):
        check_chunk(chunk)


def test_check_chunk_accepts_node_ids() -> None:
    assert check_chunk("node-0123abcd") == "node-0123abcd"
