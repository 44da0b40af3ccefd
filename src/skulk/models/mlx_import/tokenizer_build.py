"""Rebuild a Hugging Face `tokenizer.json` from a GGUF's byte-level BPE vocabulary.

The GGUF keeps the tokens (already in byte-level form, `Ġ` for a space), the merges,
each token's type, and a name for the pre-tokenizer llama.cpp applies. The pre-tokenizer
matters: SmolLM2 splits every digit on its own, and a tokenizer without that split
disagrees with llama.cpp on any text with numbers.
"""

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, processors

# llama.cpp's token types (llama_token_type): the ones that change how we build.
TOKEN_NORMAL = 1
TOKEN_UNKNOWN = 2
TOKEN_CONTROL = 3
TOKEN_USER_DEFINED = 4


@dataclass(frozen=True)
class GgufVocabulary:
    """What a GGUF says about its tokenizer (`tokenizer.ggml.*`)."""

    tokens: list[str]
    token_types: list[int]
    merges: list[str]
    pre_tokenizer: str  # tokenizer.ggml.pre, e.g. "smollm"
    add_prefix_space: bool
    bos_token_id: int | None
    add_bos_token: bool


def _byte_level(add_prefix_space: bool) -> pre_tokenizers.PreTokenizer:
    return pre_tokenizers.ByteLevel(add_prefix_space=add_prefix_space, use_regex=True)


def _smollm(add_prefix_space: bool) -> pre_tokenizers.PreTokenizer:
    # Each digit is its own pre-token, then the GPT-2 split.
    return pre_tokenizers.Sequence(
        [pre_tokenizers.Digits(individual_digits=True), _byte_level(add_prefix_space)])


# tokenizer.ggml.pre → the equivalent Hugging Face pre-tokenizer. Only splits that were
# checked against llama.cpp belong here.
PRE_TOKENIZERS: dict[str, Callable[[bool], pre_tokenizers.PreTokenizer]] = {
    "smollm": _smollm,
    "gpt-2": _byte_level,
    "default": _byte_level,
}


def _merge_pairs(merges: list[str]) -> list[tuple[str, str]]:
    pairs = []
    for merge in merges:
        # Byte-level tokens never contain a literal space (it is `Ġ`), so one split is
        # unambiguous.
        left, space, right = merge.partition(" ")
        if not space or " " in right:
            raise ValueError(f"malformed BPE merge {merge!r}")
        pairs.append((left, right))
    return pairs


def build_tokenizer(vocabulary: GgufVocabulary) -> Tokenizer:
    """A byte-level BPE tokenizer that splits and merges text the way llama.cpp does.

    Control tokens become special added tokens (matched whole, never merged across);
    user-defined tokens become plain added tokens.
    """
    if vocabulary.pre_tokenizer not in PRE_TOKENIZERS:
        raise ValueError(
            f"pre-tokenizer {vocabulary.pre_tokenizer!r} is not supported yet "
            f"(known: {', '.join(sorted(PRE_TOKENIZERS))})")
    if len(vocabulary.token_types) != len(vocabulary.tokens):
        raise ValueError("token_type and tokens differ in length")
    vocab = {token: index for index, token in enumerate(vocabulary.tokens)}
    unknown = [
        token for token, kind in zip(vocabulary.tokens, vocabulary.token_types, strict=True)
        if kind == TOKEN_UNKNOWN
    ]
    tokenizer = Tokenizer(models.BPE(
        vocab=vocab, merges=_merge_pairs(vocabulary.merges),
        unk_token=unknown[0] if unknown else None, fuse_unk=False, byte_fallback=False))
    tokenizer.pre_tokenizer = PRE_TOKENIZERS[vocabulary.pre_tokenizer](
        vocabulary.add_prefix_space)
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.post_processor = _post_processor(vocabulary)
    tokenizer.add_special_tokens(_added(vocabulary, TOKEN_CONTROL, special=True))
    tokenizer.add_tokens(_added(vocabulary, TOKEN_USER_DEFINED, special=False))
    return tokenizer


def _added(vocabulary: GgufVocabulary, kind: int, special: bool) -> list[AddedToken]:
    # The tokens are already in the vocabulary, so they keep their GGUF ids.
    return [
        AddedToken(token, special=special, normalized=False)
        for token, token_kind in zip(vocabulary.tokens, vocabulary.token_types, strict=True)
        if token_kind == kind
    ]


def _post_processor(vocabulary: GgufVocabulary) -> processors.PostProcessor:
    byte_level = processors.ByteLevel(trim_offsets=False)
    if not vocabulary.add_bos_token or vocabulary.bos_token_id is None:
        return byte_level
    bos = vocabulary.tokens[vocabulary.bos_token_id]
    template = processors.TemplateProcessing(
        single=f"{bos} $A", pair=f"{bos} $A {bos} $B",
        special_tokens=[(bos, vocabulary.bos_token_id)])
    return processors.Sequence([byte_level, template])


def write_tokenizer(vocabulary: GgufVocabulary, directory: Path) -> Tokenizer:
    """Build the tokenizer and save it as `directory/tokenizer.json`."""
    tokenizer = build_tokenizer(vocabulary)
    tokenizer.save(str(directory / "tokenizer.json"))
    return tokenizer
