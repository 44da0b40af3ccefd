import pickle

import pytest

from skulk.shared.types.chunks import DataChunk, TokenChunk, TokenLogprob
from skulk.shared.types.ids import CommandId, NodeId
from skulk.worker.runner.built import built


def token_fields(text: str = " fox") -> dict[str, object]:
    return {"kind": "token", "text": text, "token_ids": [7, 8], "finish_reason": None,
            "usage": None, "stop_sequence": None,
            "logprobs": [TokenLogprob(token=" fox", bytes=list(b" fox"), logprob=-0.5, top=[])],
            "embeddings": None, "spans": []}


def test_built_equals_the_validated_model() -> None:
    fast = built(TokenChunk, token_fields())
    checked = TokenChunk.model_validate(token_fields())
    assert fast == checked
    assert fast.model_dump() == checked.model_dump()
    assert fast.model_dump_json() == checked.model_dump_json()
    assert fast.model_fields_set == set(TokenChunk.model_fields)
    assert pickle.loads(pickle.dumps(fast)) == checked
    assert fast.model_copy(update={"text": "!"}) == checked.model_copy(update={"text": "!"})
    envelope = built(DataChunk, {"command_id": CommandId("cmd-1"), "owner_node": NodeId("n"),
                                 "sequence": 3, "chunk": fast})
    assert envelope == DataChunk(command_id=CommandId("cmd-1"), owner_node=NodeId("n"),
                                 sequence=3, chunk=checked)


def test_built_refuses_a_missing_or_unknown_field() -> None:
    fields = token_fields()
    del fields["spans"]
    with pytest.raises(TypeError, match=r"missing \['spans'\]"):
        built(TokenChunk, fields)
    with pytest.raises(TypeError, match=r"unknown \['colour'\]"):
        built(TokenChunk, {**token_fields(), "colour": "red"})


def test_built_models_stay_frozen() -> None:
    chunk = built(TokenChunk, token_fields())
    with pytest.raises(ValueError):
        chunk.text = "changed"  # type: ignore[misc]
