"""Skulk's llama.cpp engine with no node around it: what the serving path costs.

    .venv/bin/python bench/engine_alone.py GGUF PROMPT... [--max-tokens 128] [--threads N]
    .venv/bin/python bench/engine_alone.py GGUF [--threads N] < requests

Loads the engine in this process as a runner does (same options, warm-up), streams each
prompt alone, greedy, and prints one JSON line per prompt: time to first token and decode
tokens/s. Given no PROMPT, it prints `{"ready": true}` once loaded and then answers
requests from stdin, one JSON line `{"prompt": ..., "max_tokens": ...}` each, until
stdin closes: `llama_server_compare.py` keeps it up that way beside the servers and
measures it in turn with them, so the gap between the engine and the served figures is
the node's per-token path (runner pipe, data plane, HTTP).
"""

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
from skulk.shared.types.ids import ModelId  # noqa: E402
from skulk.shared.types.tasks import ChatMessage, GenerationParams  # noqa: E402
from skulk.worker.engines.llama_cpp.description import LlamaCppOptions  # noqa: E402
from skulk.worker.engines.llama_cpp.engine import LlamaCppEngine  # noqa: E402
from skulk.worker.engines.protocol import EngineConfig  # noqa: E402


def generate(engine: LlamaCppEngine, prompt: str, max_tokens: int) -> dict[str, float]:
    """One prompt alone, greedy: time to first token, tokens, and the decode's seconds."""
    params = GenerationParams(model_id=ModelId("bench"), temperature=0.0,
                              max_tokens=max_tokens,
                              messages=[ChatMessage(role="user", content=prompt)])
    started = time.perf_counter()
    first = last = None
    tokens = 0
    for chunk in engine.generate(params):
        if chunk.token_ids:
            last = time.perf_counter()
            first = first or last
            tokens += len(chunk.token_ids)
    assert first is not None and last is not None, "the engine produced nothing"
    return {"ttft": first - started, "tokens": tokens, "decode_seconds": last - first}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("gguf")
    parser.add_argument("prompts", nargs="*",
                        help="prompts to answer (none: read requests from stdin)")
    parser.add_argument("--max-tokens", type=int, default=128)
    parser.add_argument("--context", type=int, default=8192)
    parser.add_argument("--threads", type=int, default=None,
                        help="compute threads (default: every core)")
    parser.add_argument("--gpu-layers", type=int, default=0,
                        help="layers on the GPU, as the master would choose (default: none)")
    args = parser.parse_args()
    engine = LlamaCppEngine(EngineConfig(model_path=args.gguf,
                                         context_token_limit=args.context,
                                         n_threads=args.threads,
                                         options=LlamaCppOptions(gpu_layers=args.gpu_layers)))
    engine.load()
    engine.warm_up()
    if args.prompts:
        for prompt in args.prompts:
            print(json.dumps(generate(engine, prompt, args.max_tokens)), flush=True)
        return 0
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        request = json.loads(line)
        print(json.dumps(generate(engine, request["prompt"], request["max_tokens"])),
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
