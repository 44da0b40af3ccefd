import pytest

from skulk.models.peers.ranges import ByteRange, RangeNotSatisfiable, parse_range


def test_no_header_means_the_whole_file() -> None:
    assert parse_range(None, 10) == ByteRange(0, 9, 10, partial=False)


def test_open_ended_range_is_what_a_resume_sends() -> None:
    answer = parse_range("bytes=4-", 10)
    assert answer == ByteRange(4, 9, 10, partial=True)
    assert answer.length == 6 and answer.content_range == "bytes 4-9/10"


def test_closed_range_is_clipped_to_the_file() -> None:
    assert parse_range("bytes=2-3", 10) == ByteRange(2, 3, 10, partial=True)
    assert parse_range("bytes=2-99", 10) == ByteRange(2, 9, 10, partial=True)


def test_suffix_range_is_the_last_bytes() -> None:
    assert parse_range("bytes=-3", 10) == ByteRange(7, 9, 10, partial=True)
    assert parse_range("bytes=-30", 10) == ByteRange(0, 9, 10, partial=True)


@pytest.mark.parametrize("header", ["bytes=10-", "bytes=11-12", "bytes=-0"])
def test_range_past_the_end_is_not_satisfiable(header: str) -> None:
    with pytest.raises(RangeNotSatisfiable):
        parse_range(header, 10)


@pytest.mark.parametrize("header", ["bytes=0-1,4-5", "items=0-1", "bytes=x-", "bytes=-",
                                    "bytes=5-2"])
def test_ranges_this_server_does_not_serve_are_ignored(header: str) -> None:
    assert parse_range(header, 10) == ByteRange(0, 9, 10, partial=False)
