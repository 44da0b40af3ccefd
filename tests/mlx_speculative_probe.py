"""Runs the MLX engine in this process on a list of requests and prints one JSON line per
request: its tokens, text, usage and timings. Started by the speculative decoding tests
and benchmark as a subprocess, so OpenBLAS can be preloaded the way a runner gets it.

    python tests/mlx_speculative_probe.py < job.json

The job: {"model": dir, "options": {...}, "limit": tokens, "requests": [{"id": str,
"messages": [...], "max_tokens": n, "temperature": t, "speculative": {...} | null}]}.
"""

import json
import sys
import time
from typing import Any

from skulk.shared.types.chunks import TokenChunk
from skulk.shared.types.tasks import GenerationParams
from skulk.worker.engines.mlx.engine import MlxEngine
from skulk.worker.engines.mlx.options import MlxOptions
from skulk.worker.engines.mlx.requests import Request
from skulk.worker.engines.protocol import EngineConfig


class RoundCounter:
    """Counts the verified rounds that carried a draft (for mean accepted length)."""

    def __init__(self, engine: MlxEngine) -> None:
        self.rounds = 0
        speculator = engine.loop.speculator
        if speculator is None:
            return
        record = speculator.record

        def counted(request: Request, drafted: int, accepted: int, seconds: float) -> None:
            self.rounds += drafted > 0
            record(request, drafted, accepted, seconds)
        # Wraps this instance's bound method; mypy checks it against the unbound one.
        speculator.record = counted  # type: ignore[method-assign, assignment]


def run(engine: MlxEngine, request: dict[str, Any]) -> dict[str, Any]:
    params = GenerationParams.model_validate({
        "model_id": "probe", "messages": request["messages"],
        "max_tokens": request.get("max_tokens", 64),
        "temperature": request.get("temperature", 0.0),
        "speculative": request.get("speculative")})
    started = time.perf_counter()
    first: float | None = None
    chunks: list[TokenChunk] = []
    for chunk in engine.generate(params):
        if first is None and chunk.token_ids:
            first = time.perf_counter()
        chunks.append(chunk)
    ended = time.perf_counter()
    usage = chunks[-1].usage
    tokens = [t for c in chunks for t in c.token_ids]
    return {"id": request["id"], "tokens": tokens, "text": "".join(c.text for c in chunks),
            "usage": None if usage is None else usage.model_dump(),
            "seconds": ended - started,
            "first_token_seconds": (first or ended) - started,
            "decode_seconds": ended - (first or ended)}


def main() -> None:
    job = json.load(sys.stdin)
    engine = MlxEngine(EngineConfig(model_path=job["model"], n_threads=job.get("threads", 2),
                                    context_token_limit=job.get("limit", 4096),
                                    options=MlxOptions.parse(job.get("options", {}))))
    engine.load()
    engine.warm_up()
    counter = RoundCounter(engine)
    for request in job["requests"]:
        counter.rounds = 0
        result = run(engine, request)
        print(json.dumps({**result, "draft_rounds": counter.rounds}), flush=True)


if __name__ == "__main__":
    main()
