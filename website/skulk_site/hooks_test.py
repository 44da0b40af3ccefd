"""Markers in a page are replaced by their generated Markdown."""

import pytest

from skulk_site.hooks import replace_markers


def test_markers_are_replaced_and_unknown_names_raise() -> None:
    generated = {"a": "AAA", "b": "BBB"}
    assert replace_markers("x <!-- skulk:a --> y <!-- skulk:b -->", generated.__getitem__) == (
        "x AAA y BBB")
    with pytest.raises(KeyError):
        replace_markers("<!-- skulk:c -->", generated.__getitem__)
