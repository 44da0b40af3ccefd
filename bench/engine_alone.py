"""Skulk's llama.cpp engine with no node around it: what the serving path costs.

    .venv/bin/python bench/engine_alone.py GGUF PROMPT... [--max-tokens 128] [--threads N]
    .venv/bin/python bench/engine_alone.py GGUF --port PORT [--threads N]

Loads the engine in this process as a runner does (same options, warm-up). Given
PROMPTs, it streams each alone, greedy, and prints one JSON line per prompt: time to
first token and decode tokens/s, timed in this process. Given `--port`, it prints
`{"ready": true}` once loaded and then streams OpenAI chat chunks over HTTP on
127.0.0.1:PORT straight from the engine's loop (bench/bare_http.py) until it is stopped:
`llama_server_compare.py` keeps it up that way beside the servers and streams from it
with the same client, so the gap between it and Skulk is the node's serving path
(control plane, runner pipe, relay, FastAPI), and the gap between it and the engine timed
in-process is the client's and the socket's share, which every server pays.
"""

import argparse
import json
import socket
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.bare_http import serve  # noqa: E402

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
    parser.add_argument("prompts", nargs="*", help="prompts to answer (none: give --port)")
    parser.add_argument("--port", type=int, default=None,
                        help="serve streamed chat completions on 127.0.0.1:PORT instead")
    parser.add_argument("--max-tokens", type=int, default=128)
    parser.add_argument("--context", type=int, default=8192)
    parser.add_argument("--threads", type=int, default=None,
                        help="compute threads (default: every core)")
    parser.add_argument("--gpu-layers", type=int, default=0,
                        help="layers on the GPU, as the master would choose (default: none)")
    args = parser.parse_args()
    if bool(args.prompts) == (args.port is not None):
        parser.error("give either PROMPTs or --port")
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
    listener = socket.create_server(("127.0.0.1", args.port))
    print(json.dumps({"ready": True}), flush=True)
    serve(listener, engine.generate)
    return 0


if __name__ == "__main__":
    sys.exit(main())
