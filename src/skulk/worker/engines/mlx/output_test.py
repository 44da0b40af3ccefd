"""Rank 0's text stream: whole characters, stop sequences, finish reasons and usage."""

from pathlib import Path

from skulk.shared.types.chunks import TokenChunk
from skulk.worker.engines.mlx import mlx_api
from skulk.worker.engines.mlx.output import StreamedText


def stream(model_dir: Path, max_tokens: int = 100, stops: list[str] | None = None
           ) -> tuple[StreamedText, mlx_api.Tokenizer]:
    tokenizer = mlx_api.load_tokenizer(model_dir)
    output = StreamedText(detokenizer=tokenizer.detokenizer(), stops=stops or [],
                          eos_token_ids=tokenizer.eos_token_ids, max_tokens=max_tokens,
                          prompt_tokens=7, cached_tokens=3)
    return output, tokenizer


def feed(output: StreamedText, tokens: list[int]) -> list[TokenChunk]:
    chunks: list[TokenChunk] = []
    for token in tokens:
        chunks += output.on_token(token)
        if output.finished:
            break
    return chunks


def test_multi_byte_characters_are_never_split_across_chunks(tiny_model_dir: Path) -> None:
    output, tokenizer = stream(tiny_model_dir)
    text = "Café 東京 🙂🚀✨ naïve"
    tokens = tokenizer.encode(text, add_special_tokens=False)
    assert len(tokens) > len(text.split())  # some characters span several tokens
    chunks = feed(output, tokens) + feed(output, sorted(tokenizer.eos_token_ids)[:1])
    assert all("\ufffd" not in c.text for c in chunks)
    assert "".join(c.text for c in chunks) == text
    assert [t for c in chunks for t in c.token_ids] == tokens
    final = chunks[-1]
    assert final.finish_reason == "stop" and final.stop_sequence is None
    assert final.usage is not None and final.usage.completion_tokens == len(tokens)
    assert (final.usage.prompt_tokens, final.usage.cached_tokens) == (7, 3)


def test_a_stop_sequence_spanning_tokens_is_cut_and_reported(tiny_model_dir: Path) -> None:
    output, tokenizer = stream(tiny_model_dir, stops=["brown fox"])
    chunks = feed(output, tokenizer.encode("The quick brown fox jumps", add_special_tokens=False))
    assert "".join(c.text for c in chunks) == "The quick "
    assert chunks[-1].finish_reason == "stop" and chunks[-1].stop_sequence == "brown fox"


def test_max_tokens_ends_with_length(tiny_model_dir: Path) -> None:
    output, tokenizer = stream(tiny_model_dir, max_tokens=3)
    chunks = feed(output, tokenizer.encode("The quick brown fox jumps", add_special_tokens=False))
    assert chunks[-1].finish_reason == "length"
    assert sum(len(c.token_ids) for c in chunks) == 3


def test_max_tokens_inside_a_character_ends_the_text_before_it(tiny_model_dir: Path) -> None:
    _, tokenizer = stream(tiny_model_dir)
    text = "東京 🙂🚀"
    tokens = tokenizer.encode(text, add_special_tokens=False)
    cut_inside = 0
    for limit in range(1, len(tokens) + 1):
        output, _ = stream(tiny_model_dir, max_tokens=limit)
        chunks = feed(output, tokens)
        sent = "".join(c.text for c in chunks)
        assert "\ufffd" not in sent and text.startswith(sent), (limit, sent)
        assert chunks[-1].finish_reason == "length"
        assert [t for c in chunks for t in c.token_ids] == tokens[:limit]
        whole = tokenizer.decode(tokens[:limit])
        cut_inside += whole.endswith("\ufffd")
        assert sent == whole.rstrip("\ufffd")
    assert cut_inside, "no limit fell inside a character: the test proves nothing"
