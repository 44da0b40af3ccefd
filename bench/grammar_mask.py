"""The cost of a JSON grammar's token mask, beside unconstrained decoding in one run, on
both engines: decode tokens/s at batch 1 and batch 8, with and without `output: json`,
and the mask's own time per token on the model's vocabulary.

    .venv/bin/python bench/grammar_mask.py [--quick] [--engine both|mlx|llama_cpp]
        [--max-tokens N] [--repeats N]

Each engine runs in this process (no node), greedy, the same prompts both ways, on the
bundled SmolLM2-135M (MLX: the 4-bit copy in smollm2-135m-mlx-q4/, llama.cpp: the
bundled GGUF; both 49k-token vocabularies, which is what a mask costs over). The
constrained requests ask for an object with a required free string (SCHEMA), so the model
writes freely inside the grammar, the mask is computed every step and no answer closes
early. Timed: the full-batch decode steps (every
request streaming, none ended), median ms per token; overhead = constrained /
unconstrained ms per token - 1 (budgets under 96 tokens put every step in the closing
window, the worst case). The mask alone (`mask_ms`: llguidance's
`allowed()` per token along a JSON answer; `closing_ms`: the closing plan's check per
token in the last 96 tokens of a budget) says how much of the overhead is the mask and
whether it overlapped the model's step: with no overlap, constrained ms/token is about
plain ms/token + mask_ms. Default about 1-2 minutes on an idle 2-core machine;
`--quick` about 30 s (shorter answers, one repeat). Writes
bench/results/grammar_mask-*.json.
"""

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.results import write_result  # noqa: E402

from skulk.shared.types.chunks import TokenChunk  # noqa: E402
from skulk.shared.types.ids import ModelId, TaskId  # noqa: E402
from skulk.shared.types.tasks import ChatMessage, GenerationParams  # noqa: E402
from skulk.worker.engines.grammar.compile import ANY_OBJECT, compile_json_schema  # noqa: E402
from skulk.worker.engines.grammar.constraint import CLOSING_WINDOW, Constraint  # noqa: E402
from skulk.worker.engines.grammar.vocabulary import Vocabulary  # noqa: E402
from skulk.worker.engines.protocol import Engine, EngineConfig, TaskOutput  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
MLX_COPY = ROOT / "smollm2-135m-mlx-q4"
PROMPTS = ["Describe a city you like as JSON.", "List three fruits and their colours.",
           "Give a recipe with its ingredients.", "Tell me about the weather today.",
           "What is in a library?", "Plan a weekend trip.", "Name some planets.",
           "Describe your favourite book."]
# An answer of the kind the constrained requests write, for timing the mask alone.
ANSWER = json.dumps({"city": "Lisbon", "country": "Portugal", "population": 545000,
                     "sights": ["Belem Tower", "Alfama", "Jeronimos Monastery"],
                     "weather": {"summer": "hot and dry", "winter": "mild and wet"},
                     "rating": 4.5, "visited": True}, separators=(",", ":"))
THREADS = 2
# What the constrained requests must answer: one required string the model writes
# freely, so no answer closes early (one that did would thin the timed batch) and the
# closing strategy can still close it within a short budget.
SCHEMA = json.dumps({"type": "object", "required": ["text"],
                     "properties": {"text": {"type": "string"}}})


def decode_step_ms(engine: Engine, batch: int, max_tokens: int,
                   constrained: bool) -> list[float]:
    """The durations (ms) of the full-batch decode steps of `batch` requests decoded
    together: the steps taken once every request has streamed a token and before any has
    ended (prefill, and a batch thinned by answers that ended early, left out: a JSON
    answer that closes early would otherwise look slower per token)."""
    for index in range(batch):
        engine.submit(TaskId(f"r{index}"), GenerationParams(
            model_id=ModelId("bench"), temperature=0.0, max_tokens=max_tokens,
            output="json" if constrained else "text",
            json_schema=SCHEMA if constrained else None,
            messages=[ChatMessage(role="user", content=PROMPTS[index % len(PROMPTS)])]))
    streaming: set[str] = set()
    ended: set[str] = set()
    durations: list[float] = []
    while engine.has_work:
        full = len(streaming) == batch and not ended
        started = time.perf_counter()
        events = engine.step()
        if full:
            durations.append(1000 * (time.perf_counter() - started))
        for event in events:
            if isinstance(event, TaskOutput):
                streaming.add(event.task_id)
                if not isinstance(event.chunk, TokenChunk) or event.chunk.finish_reason:
                    ended.add(event.task_id)
    return durations


def mask_costs(vocabulary: Vocabulary, repeats: int) -> dict[str, float]:
    """Milliseconds per token of the mask (`allowed`) along ANSWER (under any JSON
    object's grammar), and of the closing
    plan's check (`vetted` inside the window), median over the answer's tokens."""
    grammar = compile_json_schema(ANY_OBJECT)
    tokens = vocabulary.tokenizer.tokenize_str(ANSWER)
    mask, closing = [], []
    for _ in range(repeats):
        constraint = Constraint(vocabulary, grammar)
        for token in tokens:
            started = time.perf_counter()
            constraint.allowed()
            mask.append(time.perf_counter() - started)
            started = time.perf_counter()
            constraint.vetted(token, CLOSING_WINDOW)  # inside the window: plans
            closing.append(time.perf_counter() - started)
            constraint.advance([token])
    return {"answer_tokens": len(tokens), "vocabulary": vocabulary.size,
            "mask_ms": round(1000 * statistics.median(mask), 3),
            "closing_ms": round(1000 * statistics.median(closing), 3)}


def mlx_engine() -> tuple[Engine, Vocabulary]:
    from skulk.worker.engines.mlx.engine import MlxEngine
    from skulk.worker.engines.mlx.options import MlxOptions

    engine = MlxEngine(EngineConfig(model_path=str(MLX_COPY), context_token_limit=2048,
                                    n_threads=THREADS, options=MlxOptions.parse(
                                        {"max_batch": "8", "speculation": "false",
                                         "prefix_cache_mb": "0"})))
    engine.load()
    engine.warm_up()
    vocabulary = engine.loop.vocabulary
    assert vocabulary is not None
    return engine, vocabulary


def llama_cpp_engine() -> tuple[Engine, Vocabulary]:
    from skulk.models.catalog import ModelCatalog
    from skulk.worker.engines.llama_cpp.description import LlamaCppOptions
    from skulk.worker.engines.llama_cpp.engine import LlamaCppEngine

    catalog = ModelCatalog.builtin(ROOT)
    card = catalog.resolve("smollm2-135m")
    assert card is not None
    gguf = str(catalog.local_path(card, "gguf"))
    engine = LlamaCppEngine(EngineConfig(model_path=gguf, context_token_limit=2048,
                                         n_threads=THREADS, options=LlamaCppOptions.parse(
                                             {"max_batch": "8", "shared_kv": "off"})))
    engine.load()
    engine.warm_up()
    model = engine._model  # the bench reads the engine's own vocabulary
    assert model is not None
    return engine, model.vocabulary()


ENGINES: dict[str, Callable[[], tuple[Engine, Vocabulary]]] = {
    "mlx": mlx_engine, "llama_cpp": llama_cpp_engine}


def measure(name: str, max_tokens: int, repeats: int) -> dict[str, Any]:
    started = time.monotonic()
    engine, vocabulary = ENGINES[name]()
    decode_step_ms(engine, 1, 4, constrained=True)  # builds the vocabulary's index once
    rows: list[dict[str, Any]] = []
    for batch in (1, 8):
        steps: dict[bool, list[float]] = {False: [], True: []}
        for _ in range(repeats):  # interleaved, so load drifts hit both alike
            for constrained in (False, True):
                steps[constrained] += decode_step_ms(engine, batch, max_tokens, constrained)
        if not steps[False] or not steps[True]:
            rows.append({"batch": batch, "error": "no full-batch decode step to time"})
            continue
        plain = statistics.median(steps[False]) / batch
        masked = statistics.median(steps[True]) / batch
        rows.append({"batch": batch, "plain_ms_per_token": round(plain, 3),
                     "json_ms_per_token": round(masked, 3),
                     "plain_tokens_per_second": round(1000 / plain, 2),
                     "json_tokens_per_second": round(1000 / masked, 2),
                     "steps_timed": {"plain": len(steps[False]), "json": len(steps[True])},
                     "overhead": round(masked / plain - 1, 4)})
        print(name, rows[-1], flush=True)
    costs = mask_costs(vocabulary, repeats)
    print(name, costs, flush=True)
    return {"engine": name, "rows": rows, "mask_alone": costs,
            "seconds": round(time.monotonic() - started, 1)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engine", choices=["both", *ENGINES], default="both")
    parser.add_argument("--max-tokens", type=int, default=None,
                        help="tokens per answer (default 32, --quick 16)")
    parser.add_argument("--repeats", type=int, default=None,
                        help="interleaved runs per cell (default 3, --quick 1)")
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    max_tokens = args.max_tokens or (16 if args.quick else 32)
    repeats = args.repeats or (1 if args.quick else 3)
    names = list(ENGINES) if args.engine == "both" else [args.engine]
    engines = [measure(name, max_tokens, repeats) for name in names]
    write_result("grammar_mask", {"max_tokens": max_tokens, "repeats": repeats,
                                  "threads": THREADS, "engines": engines},
                 "bench/grammar_mask.py, median full-batch decode step per cell over "
                 "interleaved runs; in-process engines, greedy, SmolLM2-135M")
    return 0


if __name__ == "__main__":
    sys.exit(main())
