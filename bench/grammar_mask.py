"""The cost of a JSON grammar's token mask on MLX decode, beside unconstrained decoding in
one run: decode tokens/s at batch 1 and batch 8, with and without `output: json`.

    .venv/bin/python bench/grammar_mask.py [--model MLX_DIR] [--max-tokens 160] [--quick]

The engine runs in this process (no node), greedy, the same prompts both ways; the
constrained requests ask for any JSON object, so the model writes freely inside the
grammar and the mask is computed every step (and, in the last 96 tokens, the closing
plan). Overhead = 1 - constrained / unconstrained tokens/s. `--quick` uses a tiny
random-weight model and short answers (seconds). Writes bench/results/grammar_mask-*.json.
"""

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.results import write_result  # noqa: E402

from skulk.shared.types.chunks import TokenChunk  # noqa: E402
from skulk.shared.types.ids import ModelId, TaskId  # noqa: E402
from skulk.shared.types.tasks import ChatMessage, GenerationParams  # noqa: E402
from skulk.worker.engines.mlx.engine import MlxEngine  # noqa: E402
from skulk.worker.engines.mlx.options import MlxOptions  # noqa: E402
from skulk.worker.engines.protocol import EngineConfig, TaskOutput  # noqa: E402

BUNDLED_COPY = Path(__file__).resolve().parents[1] / "smollm2-135m-mlx-q4"
PROMPTS = ["Describe a city you like as JSON.", "List three fruits and their colours.",
           "Give a recipe with its ingredients.", "Tell me about the weather today.",
           "What is in a library?", "Plan a weekend trip.", "Name some planets.",
           "Describe your favourite book."]


def decode_rate(engine: MlxEngine, batch: int, max_tokens: int, constrained: bool) -> float:
    """Generated tokens per second of `batch` requests decoded together."""
    for index in range(batch):
        engine.submit(TaskId(f"r{index}"), GenerationParams(
            model_id=ModelId("bench"), temperature=0.0, max_tokens=max_tokens,
            output="json" if constrained else "text",
            messages=[ChatMessage(role="user", content=PROMPTS[index % len(PROMPTS)])]))
    generated = 0
    started = time.perf_counter()
    while engine.has_work:
        for event in engine.step():
            if isinstance(event, TaskOutput) and isinstance(event.chunk, TokenChunk):
                usage = event.chunk.usage
                generated += usage.completion_tokens if usage is not None else 0
    return generated / (time.perf_counter() - started)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, default=BUNDLED_COPY)
    parser.add_argument("--max-tokens", type=int, default=160)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    model, max_tokens = args.model, args.max_tokens
    if args.quick:
        from skulk.testing.tiny_model import write_tiny_model
        model, max_tokens = write_tiny_model(Path(tempfile.mkdtemp()) / "tiny"), 48
    engine = MlxEngine(EngineConfig(model_path=str(model), context_token_limit=2048,
                                    options=MlxOptions.parse({"max_batch": "8",
                                                              "speculation": "false"})))
    engine.load()
    engine.warm_up()
    decode_rate(engine, 1, 8, constrained=True)  # builds the vocabulary once
    rows: list[dict[str, Any]] = []
    for batch in (1, 8):
        rates = {False: [], True: []}  # type: dict[bool, list[float]]
        for _ in range(args.repeats):  # interleaved, so load drifts hit both alike
            for constrained in (False, True):
                rates[constrained].append(decode_rate(engine, batch, max_tokens, constrained))
        plain, masked = max(rates[False]), max(rates[True])
        rows.append({"batch": batch, "plain_tokens_per_second": round(plain, 2),
                     "json_tokens_per_second": round(masked, 2),
                     "overhead": round(1 - masked / plain, 4)})
        print(rows[-1], flush=True)
    write_result("grammar_mask", {"model": str(model.name), "max_tokens": max_tokens,
                                  "rows": rows}, "bench/grammar_mask.py, best of "
                 f"{args.repeats} interleaved runs per cell")
    return 0


if __name__ == "__main__":
    sys.exit(main())
