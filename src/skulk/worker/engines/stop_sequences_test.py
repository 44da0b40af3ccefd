from hypothesis import given
from hypothesis import strategies as st

from skulk.worker.engines.stop_sequences import StopScanner


def test_text_without_stops_passes_through() -> None:
    scanner = StopScanner(["END"])
    assert scanner.feed("hello ") == "hello "
    assert not scanner.stopped


def test_a_stop_split_across_pieces_is_caught_and_not_emitted() -> None:
    scanner = StopScanner(["END"])
    assert scanner.feed("one E") == "one "
    assert scanner.feed("N") == ""
    assert scanner.feed("D two") == ""
    assert scanner.stopped and scanner.matched == "END"


def test_a_false_alarm_is_released() -> None:
    scanner = StopScanner(["END"])
    assert scanner.feed("E") == ""
    assert scanner.feed("X") == "EX"
    assert scanner.feed("EN") == ""
    assert scanner.flush() == "EN"


def test_earliest_of_several_stops_wins() -> None:
    scanner = StopScanner(["b", "a"])
    assert scanner.feed("xxab") == "xx"


@given(st.lists(st.text(alphabet="abcE", max_size=4), max_size=12))
def test_output_is_the_text_up_to_the_first_stop(pieces: list[str]) -> None:
    scanner = StopScanner(["cab", "EE"])
    out = ""
    for piece in pieces:
        out += scanner.feed(piece)
        if scanner.stopped:
            break
    if not scanner.stopped:
        out += scanner.flush()
    full = "".join(pieces)
    cut = min((i for i in (full.find("cab"), full.find("EE")) if i >= 0), default=len(full))
    assert out == full[:cut]
