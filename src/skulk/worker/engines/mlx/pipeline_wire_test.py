import numpy as np
import pytest

from skulk.worker.engines.mlx.pipeline_wire import (
    WANTS_AGREEMENT,
    Header,
    PipelineProtocolError,
    Reply,
    decode_header,
    decode_reply,
    encode_header,
    encode_reply,
    header_size,
    reply_size,
)


@pytest.mark.parametrize("header", [
    Header("run", 1, (5, 17, 49151)),
    Header("final", 0, (1, 2, 3, 4, 5, 6, 7, 8), flags=WANTS_AGREEMENT),
    Header("run", 0, ()),
])
def test_headers_round_trip_at_a_fixed_size(header: Header) -> None:
    vector = encode_header(header, slots=8)
    assert vector.shape == (header_size(8),) and vector.dtype == np.int32
    assert decode_header(vector, 8) == header


def test_replies_round_trip_at_a_fixed_size() -> None:
    reply = Reply(micro_batch=1, tokens=(42, 0, 7), flags=WANTS_AGREEMENT)
    vector = encode_reply(reply, slots=4)
    assert vector.shape == (reply_size(4),)
    assert decode_reply(vector, 4) == reply


def test_more_tokens_than_slots_are_refused() -> None:
    with pytest.raises(ValueError, match="5 tokens do not fit"):
        encode_reply(Reply(0, (1, 2, 3, 4, 5)), slots=4)


def test_garbage_is_a_protocol_error() -> None:
    with pytest.raises(PipelineProtocolError, match="op 9"):
        decode_header(np.array([9, 0, 0, 0, 0, 0], dtype=np.int32), slots=2)
    with pytest.raises(PipelineProtocolError, match="3 tokens"):
        decode_header(np.array([1, 0, 0, 3, 0, 0], dtype=np.int32), slots=2)
    with pytest.raises(PipelineProtocolError, match="shape"):
        decode_reply(np.zeros(3, dtype=np.int32), slots=2)
