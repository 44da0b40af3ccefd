from pathlib import Path

import pytest
from tokenizers import Tokenizer

from skulk.models.mlx_import.conftest import MERGES, SPECIALS, tiny_tokens
from skulk.models.mlx_import.tokenizer_build import (
    TOKEN_CONTROL,
    TOKEN_NORMAL,
    TOKEN_USER_DEFINED,
    GgufVocabulary,
    build_tokenizer,
    write_tokenizer,
)


def _vocabulary(pre: str = "smollm", user_defined: str | None = None,
                add_bos: bool = False) -> GgufVocabulary:
    tokens = tiny_tokens() + ([user_defined] if user_defined else [])
    types = [TOKEN_CONTROL] * len(SPECIALS) + [TOKEN_NORMAL] * (len(tiny_tokens()) - 3)
    types += [TOKEN_USER_DEFINED] if user_defined else []
    return GgufVocabulary(tokens=tokens, token_types=types, merges=MERGES, pre_tokenizer=pre,
                          add_prefix_space=False, bos_token_id=1, add_bos_token=add_bos)


def _pieces(tokenizer: Tokenizer, text: str) -> list[str]:
    return tokenizer.encode(text, add_special_tokens=False).tokens


def test_merges_apply_and_control_tokens_stay_whole() -> None:
    tokenizer = build_tokenizer(_vocabulary())
    assert _pieces(tokenizer, "hello world") == ["hello", "Ġw", "o", "r", "l", "d"]
    encoded = tokenizer.encode("<|im_start|>hello<|im_end|>", add_special_tokens=False)
    assert encoded.ids[0] == 1 and encoded.ids[-1] == 2
    assert encoded.tokens[1] == "hello"
    assert tokenizer.decode(encoded.ids, skip_special_tokens=True) == "hello"


def test_smollm_splits_every_digit_and_plain_gpt2_does_not() -> None:
    # Without merges for digits, the difference shows in the pre-tokens.
    smollm = build_tokenizer(_vocabulary("smollm")).pre_tokenizer
    gpt2 = build_tokenizer(_vocabulary("gpt-2")).pre_tokenizer
    assert smollm is not None and gpt2 is not None
    assert [p for p, _ in smollm.pre_tokenize_str("x 2024")] == ["x", "Ġ", "2", "0", "2", "4"]
    assert [p for p, _ in gpt2.pre_tokenize_str("x 2024")] == ["x", "Ġ2024"]


def test_ids_are_the_gguf_ids_and_bytes_round_trip(tmp_path: Path) -> None:
    tokens = tiny_tokens()
    write_tokenizer(_vocabulary(user_defined="<tool>"), tmp_path)
    tokenizer = Tokenizer.from_file(str(tmp_path / "tokenizer.json"))
    assert tokenizer.token_to_id("hello") == tokens.index("hello")
    assert tokenizer.token_to_id("<tool>") == len(tokens)
    text = "héllo 🦊 <tool> 42\n\n\t"
    ids = tokenizer.encode(text, add_special_tokens=False).ids
    assert len(tokens) in ids  # the user-defined token matched whole
    assert tokenizer.decode(ids) == text


def test_bos_is_added_only_when_the_gguf_asks() -> None:
    assert build_tokenizer(_vocabulary(add_bos=True)).encode("he").ids[0] == 1
    assert build_tokenizer(_vocabulary()).encode("he").ids[0] != 1


def test_unknown_pre_tokenizer_is_refused() -> None:
    with pytest.raises(ValueError, match="llama-bpe"):
        build_tokenizer(_vocabulary("llama-bpe"))
