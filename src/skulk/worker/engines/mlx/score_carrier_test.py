import numpy as np
import pytest

from skulk.worker.engines.mlx.score_carrier import decode_scores, encode_scores, wire_size
from skulk.worker.engines.token_logprobs import Scored


def test_scores_round_trip_exactly_with_their_alternatives_and_counts() -> None:
    entries = [[Scored(7, -0.25, ((7, -0.25), (3, -1.5)))],
               [],  # a row whose token was an end token: nothing scored
               [Scored(1, -3.0), Scored(2, -2.0**-30)]]
    tops = [2, 1, 0]
    vector = encode_scores(entries, tops, per_row=2)
    assert vector.dtype == np.int32 and len(vector) == wire_size(tops, 2)
    assert decode_scores(vector, tops, per_row=2) == entries


def test_very_unlikely_tokens_travel_as_finite_ints() -> None:
    entry = Scored(5, -2.0**100, ((0, -0.0), (5, -2.0**100)))
    vector = encode_scores([[entry]], [2], per_row=1)
    assert decode_scores(vector, [2], per_row=1) == [[entry]]


def test_a_message_of_the_wrong_shape_is_refused() -> None:
    with pytest.raises(ValueError, match="alternatives"):
        encode_scores([[Scored(1, -1.0)]], [2], per_row=1)
    with pytest.raises(ValueError, match="scored tokens"):
        encode_scores([[Scored(1, -1.0), Scored(2, -1.0)]], [0], per_row=1)
    with pytest.raises(ValueError, match="was due"):
        decode_scores(np.zeros(4, dtype=np.int32), [0], per_row=1)
    bad = np.array([5, 0, 0], dtype=np.int32)
    with pytest.raises(ValueError, match="scored tokens"):
        decode_scores(bad, [0], per_row=1)
