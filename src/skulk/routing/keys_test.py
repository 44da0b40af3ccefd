from skulk.routing.keys import key_matches


def test_exact_and_single_chunk_wildcards() -> None:
    assert key_matches("a/b", "a/b")
    assert not key_matches("a/b", "a/c")
    assert key_matches("a/*", "a/b")
    assert not key_matches("a/*", "a/b/c")
    assert not key_matches("a/*", "a")


def test_double_star_matches_zero_or_more_chunks() -> None:
    assert key_matches("a/**", "a")
    assert key_matches("a/**", "a/b/c")
    assert key_matches("a/**/z", "a/z")
    assert key_matches("a/**/z", "a/b/c/z")
    assert not key_matches("a/**/z", "a/b/c")
