"""Time to first token and decode speed: the full Skulk stack vs llama-cpp-python direct.

One run measures both, one after the other on the same machine (never at the same time:
they would share the cores), with the same prompts, greedy sampling and thread count,
and prints the figures side by side with their ratios.

    .venv/bin/python bench/chat_latency.py [--repeats 3] [--max-tokens 128]
"""

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import cast

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.results import write_result  # noqa: E402
from tests.node_process import NodeProcess  # noqa: E402

PROMPTS = [
    "Explain why the sky is blue in a few sentences.",
    "Write a short poem about a fox in the snow.",
    "List five uses for a paperclip.",
]


@dataclass
class Sample:
    ttft: float
    tokens: int
    decode_seconds: float

    @property
    def decode_tps(self) -> float:
        return (self.tokens - 1) / self.decode_seconds if self.decode_seconds > 0 else 0.0


def _sample(pieces: Iterator[str], started: float) -> Sample:
    first = last = None
    tokens = 0
    for _ in pieces:
        last = time.perf_counter()
        first = first or last
        tokens += 1
    assert first is not None and last is not None, "no tokens came back"
    return Sample(ttft=first - started, tokens=tokens, decode_seconds=last - first)


def skulk_pieces(url: str, prompt: str, max_tokens: int) -> Iterator[str]:
    body = {"model": "smollm2-135m", "messages": [{"role": "user", "content": prompt}],
            "max_tokens": max_tokens, "temperature": 0, "stream": True}
    with httpx.stream("POST", f"{url}/v1/chat/completions", json=body, timeout=120) as reply:
        reply.raise_for_status()
        for line in reply.iter_lines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            for choice in json.loads(line[6:]).get("choices", []):
                if choice["delta"].get("content"):
                    yield choice["delta"]["content"]


def measure_skulk(prompts: list[str], repeats: int, max_tokens: int) -> list[Sample]:
    with tempfile.TemporaryDirectory() as data_dir:
        node = NodeProcess(Path(data_dir), "--serve", "smollm2-135m", "-q").start()
        try:
            node.wait_model_ready()
            list(skulk_pieces(node.url, "warm up", 8))
            return [_sample(skulk_pieces(node.url, p, max_tokens), time.perf_counter())
                    for _ in range(repeats) for p in prompts]
        finally:
            node.stop()


def measure_direct(prompts: list[str], repeats: int, max_tokens: int) -> list[Sample]:
    from llama_cpp import Llama
    from llama_cpp.llama_types import CreateChatCompletionStreamResponse

    from skulk.models.catalog import ModelCatalog

    catalog = ModelCatalog.builtin(Path(tempfile.gettempdir()))
    card = catalog.resolve("smollm2-135m")
    assert card is not None
    llama = Llama(model_path=str(catalog.local_path(card, "gguf")), n_ctx=8192,
                  n_threads=os.cpu_count(), verbose=False)

    def pieces(prompt: str) -> Iterator[str]:
        # Streamed, so chunks, not one response (llama_cpp's return type has both).
        stream = cast(Iterator[CreateChatCompletionStreamResponse], llama.create_chat_completion(
            messages=[{"role": "user", "content": prompt}], temperature=0,
            max_tokens=max_tokens, stream=True))
        for chunk in stream:
            text = chunk["choices"][0]["delta"].get("content")
            if isinstance(text, str) and text:
                yield text

    list(pieces("warm up"))
    return [_sample(pieces(p), time.perf_counter()) for _ in range(repeats) for p in prompts]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--max-tokens", type=int, default=128)
    args = parser.parse_args()
    skulk = measure_skulk(PROMPTS, args.repeats, args.max_tokens)
    direct = measure_direct(PROMPTS, args.repeats, args.max_tokens)
    s_ttft = statistics.median(s.ttft for s in skulk) * 1000
    d_ttft = statistics.median(s.ttft for s in direct) * 1000
    s_tps = statistics.median(s.decode_tps for s in skulk)
    d_tps = statistics.median(s.decode_tps for s in direct)
    print(f"{len(skulk)} requests each, max_tokens={args.max_tokens}, greedy, medians")
    print(f"{'':24}{'skulk (HTTP)':>14}{'llama-cpp direct':>18}{'ratio':>10}")
    print(f"{'time to first token ms':24}{s_ttft:14.1f}{d_ttft:18.1f}{s_ttft / d_ttft:10.2f}"
          f"   (+{s_ttft - d_ttft:.1f} ms)")
    print(f"{'decode tokens/s':24}{s_tps:14.1f}{d_tps:18.1f}{s_tps / d_tps:10.2f}")
    write_result("chat_latency", {
        "requests": len(skulk), "max_tokens": args.max_tokens,
        "skulk": {"ttft_ms": s_ttft, "decode_tps": s_tps},
        "direct": {"ttft_ms": d_ttft, "decode_tps": d_tps}})
    return 0


if __name__ == "__main__":
    sys.exit(main())
