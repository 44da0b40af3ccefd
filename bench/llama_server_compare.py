"""Skulk's llama.cpp engine against llama.cpp's own `llama-server`, on the same GGUF.

    .venv/bin/python bench/llama_server_compare.py [--repeats 3] [--max-tokens 128]
                                                   [--threads N] [--streams 1 4 8]
                                                   [--parallel 4] [--gpu-layers N]
                                                   [--llama-server PATH] [--name NAME]
                                                   [--results-dir DIR]

`llama-server` is built from the llama.cpp vendored in the installed llama-cpp-python's
sdist (bench/llama_server_build.py, cached in bench/.cache; ~5 minutes the first time).
Three servers, each started alone, measured, stopped, in turn, `--repeats` rounds (the
order rotates each round, so the machine's drift during a run favours none of them):
  skulk            `skulk run --serve smollm2-135m` (continuous batching, 4 sequences)
  skulk-unbatched  the same with `--no-batching` (one request at a time)
  llama-server     `-np 4 -t <threads> -c 8192 -kvu` (4 slots sharing one context's cells,
                   as Skulk's sequences do by default), its other defaults untouched
`--threads` (default: every core) is the engine's compute threads in all three and in the
engine alone. Below the core count, a core is left to the serving path, as on a machine
with more cores than the model's threads use.
Each round also runs the engine alone in a process of its own (bench/engine_alone.py: no
node, no HTTP), on the same prompts, in its turn of the rotation: the gap between it and
`skulk` is the node's per-token path. The same `openai` client streams from each server,
greedy. Figures: time to first token and decode tokens/s of one stream alone (medians
over prompts and rounds), and aggregate tokens/s with `--streams` streams (1, 4 and 8 by
default) each sending `--per-stream` requests back to back (medians over rounds).
`--parallel` is the requests decoded at once by each server (Skulk's `max_batch`,
llama-server's slots; 4 by default). On a GPU (bench/gpu_check): `--gpu-layers` puts
that many layers on it in llama-server and the engine alone (Skulk's master chooses its
own from the GPU's free memory), `--llama-server` names a CUDA build, and `--name` keeps
the result apart from the CPU runs the site charts. Beside each ratio of medians,
the range of Skulk / llama-server within single rounds: the machine drifts more between
rounds than within one. Below the table, each row's round-to-round standard deviation of
that ratio, and how many rounds would put the mean's gap from 1.0 two standard errors
clear of it. Each prompt is made unique, so no server reuses another request's prompt
beyond the chat template's shared system prompt.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

import httpx
import openai

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.chat_latency import Sample  # noqa: E402
from bench.llama_server_build import llama_server  # noqa: E402
from bench.llama_server_figures import (  # noqa: E402
    ENGINE_ALONE,
    SERVERS,
    Round,
    report,
    round_ratios,
    summary,
    write,
)
from bench.results import RESULTS_DIR  # noqa: E402
from tests.node_process import NodeProcess  # noqa: E402

from skulk.testing.ports import free_port  # noqa: E402

PROMPTS = [
    "Explain why the sky is blue in a few sentences.",
    "Write a short story about a fox in the snow.",
    "List five uses for a paperclip and explain each one.",
    "Describe how a bicycle works.",
]
CONCURRENCY = (1, 4, 8)
PARALLEL = 4
# Skulk's max_batch tops out at 64 (LlamaCppOptions).
MOST_PARALLEL = 64
CONTEXT = 8192


class CpuMeter:
    """CPU seconds the named processes spent between `start` and `stop`."""

    def __init__(self, pids: dict[str, int]) -> None:
        import psutil

        self._processes = {name: psutil.Process(pid) for name, pid in pids.items()}
        self._before: dict[str, float] = {}

    def _now(self) -> dict[str, float]:
        return {name: sum(process.cpu_times()[:2]) for name, process in self._processes.items()}

    def start(self) -> None:
        self._before = self._now()

    def per_token(self, tokens: int) -> dict[str, float]:
        after = self._now()
        return {name: (after[name] - self._before[name]) * 1000 / max(tokens, 1)
                for name in after}


def stream(client: openai.OpenAI, model: str, prompt: str, max_tokens: int) -> Sample:
    started = time.perf_counter()
    first = last = None
    pieces = 0
    usage_tokens = None
    for chunk in client.chat.completions.create(
            model=model, messages=[{"role": "user", "content": prompt}], temperature=0,
            max_tokens=max_tokens, stream=True, stream_options={"include_usage": True}):
        if chunk.usage is not None:
            usage_tokens = chunk.usage.completion_tokens
        if chunk.choices and chunk.choices[0].delta.content:
            last = time.perf_counter()
            first = first or last
            pieces += 1
    assert first is not None and last is not None, "no tokens came back"
    return Sample(first - started, usage_tokens or pieces, last - first)


def aggregate(client: openai.OpenAI, model: str, streams: int, per_stream: int,
              max_tokens: int, tag: str) -> tuple[float, int]:
    """Tokens per second over all streams, from the first request to the last end, and
    how many tokens that was."""
    counts = [0] * streams
    failures: list[BaseException] = []

    def user(index: int) -> None:
        try:
            for turn in range(per_stream):
                prompt = f"({tag} user {index} turn {turn}) {PROMPTS[(index + turn) % 4]}"
                counts[index] += stream(client, model, prompt, max_tokens).tokens
        except BaseException as error:  # reported below; a benchmark must not hide one
            failures.append(error)

    threads = [threading.Thread(target=user, args=(i,)) for i in range(streams)]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=600)
    elapsed = time.perf_counter() - started
    if failures:
        raise failures[0]
    return sum(counts) / elapsed, sum(counts)


@contextmanager
def skulk_server(batching: bool, threads: int | None = None, parallel: int = PARALLEL,
                 ) -> Iterator[tuple[str, str, dict[str, int]]]:
    with tempfile.TemporaryDirectory() as data_dir:
        flags = ["--serve", "smollm2-135m", "-q"] + ([] if batching else ["--no-batching"])
        flags += ["--engine-option", f"llama_cpp.max_batch={parallel}"]
        # Always given: a node's own default leaves a core to serving, llama-server's not.
        flags += ["--threads", str(threads or os.cpu_count())]
        node = NodeProcess(Path(data_dir), *flags).start()
        try:
            node.wait_model_ready(timeout=300)
            assert node.process is not None
            pids = {"node": node.process.pid, "runner": node.runner_pids()[0]}
            yield f"{node.url}/v1", "smollm2-135m", pids
        finally:
            node.stop()


@contextmanager
def llama_cpp_server(binary: Path, gguf: Path, threads: int | None = None,
                     parallel: int = PARALLEL, gpu_layers: int | None = None,
                     ) -> Iterator[tuple[str, str, dict[str, int]]]:
    port = free_port()
    process = subprocess.Popen(
        [str(binary), "-m", str(gguf), "--host", "127.0.0.1", "--port", str(port),
         "-t", str(threads or os.cpu_count()), "-np", str(parallel), "-c", str(CONTEXT),
         "-kvu", *([] if gpu_layers is None else ["-ngl", str(gpu_layers)])],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("llama-server did not become healthy")
            time.sleep(0.2)
        yield f"http://127.0.0.1:{port}/v1", "smollm2", {"server": process.pid}
    finally:
        process.terminate()
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:  # seen once: a run's four rounds were lost to it
            process.kill()
            process.wait(30)


def measure(server: Callable[[], AbstractContextManager[tuple[str, str, dict[str, int]]]],
            name: str, round_: int, args: argparse.Namespace) -> Round:
    result = Round()
    with server() as (url, model, pids):
        client = openai.OpenAI(base_url=url, api_key="unused", max_retries=0, timeout=600)
        stream(client, model, "Say hello.", 8)  # warm up
        # The client's own CPU too (this process: the streaming threads), which every
        # server's row pays and the engine alone does not.
        meter = CpuMeter({**pids, "client": os.getpid()})
        meter.start()
        for index, prompt in enumerate(PROMPTS):
            result.alone.append(stream(client, model, f"({name} {round_}.{index}) {prompt}",
                                       args.max_tokens))
        for process, ms in meter.per_token(sum(s.tokens for s in result.alone)).items():
            result.cpu_ms_per_token[f"{process}_alone"] = ms
        for streams in args.streams:
            meter.start()
            result.aggregate[streams], tokens = aggregate(
                client, model, streams, args.per_stream, args.max_tokens, f"{name} {round_}")
            for process, ms in meter.per_token(tokens).items():
                result.cpu_ms_per_token[f"{process}_{streams}_streams"] = ms
    alone = statistics.median(s.decode_tps for s in result.alone)
    print(f"  {name} round {round_}: alone {alone:.1f} tok/s, "
          + ", ".join(f"{k} streams {v:.1f} tok/s" for k, v in result.aggregate.items()),
          flush=True)
    return result


def engine_alone(gguf: Path, round_: int, args: argparse.Namespace) -> list[Sample]:
    """The engine's single-stream figures with no serving path, the alone prompts'."""
    prompts = [f"(engine {round_}.{index}) {prompt}" for index, prompt in enumerate(PROMPTS)]
    script = Path(__file__).resolve().parent / "engine_alone.py"
    lines = subprocess.run([sys.executable, str(script), str(gguf), *prompts,
                            "--max-tokens", str(args.max_tokens), "--context", str(CONTEXT),
                            *([] if args.threads is None else ["--threads", str(args.threads)]),
                            *([] if args.gpu_layers is None
                              else ["--gpu-layers", str(args.gpu_layers)])],
                           check=True, capture_output=True, text=True, timeout=900).stdout
    samples = [Sample(**json.loads(line)) for line in lines.splitlines() if line.strip()]
    print(f"  engine alone round {round_}: "
          f"{statistics.median(s.decode_tps for s in samples):.1f} tok/s", flush=True)
    return samples


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--max-tokens", type=int, default=128)
    parser.add_argument("--per-stream", type=int, default=2)
    parser.add_argument("--threads", type=int, default=None,
                        help="the engines' compute threads (default: every core)")
    parser.add_argument("--streams", type=int, nargs="+", default=list(CONCURRENCY),
                        help="the stream counts of the aggregate rows (default: 1 4 8)")
    parser.add_argument("--parallel", type=int, default=PARALLEL,
                        choices=range(1, MOST_PARALLEL + 1), metavar=f"1..{MOST_PARALLEL}",
                        help="requests each server decodes at once (default: 4)")
    parser.add_argument("--gpu-layers", type=int, default=None,
                        help="layers llama-server and the engine alone put on the GPU")
    parser.add_argument("--llama-server", type=Path, default=None,
                        help="a llama-server binary (default: built from the sdist)")
    parser.add_argument("--name", default=None,
                        help="the result's name under bench/results/")
    parser.add_argument("--results-dir", type=Path, default=RESULTS_DIR,
                        help="where the result JSON goes (default: bench/results/)")
    args = parser.parse_args()
    from skulk.testing.models import bundled_gguf

    gguf = bundled_gguf()
    binary = args.llama_server or llama_server()
    servers = {"skulk": lambda: skulk_server(True, args.threads, args.parallel),
               "skulk-unbatched": lambda: skulk_server(False, args.threads, args.parallel),
               "llama-server": lambda: llama_cpp_server(binary, gguf, args.threads,
                                                        args.parallel, args.gpu_layers)}
    rounds: dict[str, list[Round]] = {name: [] for name in SERVERS}
    engine: list[Sample] = []
    for round_ in range(args.repeats):
        # The engine alone takes its turn in the rotation too: run always last, it read
        # the round's end, whichever way the machine drifted.
        for name in rotated(SERVERS + (ENGINE_ALONE,), round_):
            if name == ENGINE_ALONE:
                engine += engine_alone(gguf, round_, args)
            else:
                rounds[name].append(measure(servers[name], name, round_, args))
    figures = {name: summary(rounds[name]) for name in SERVERS}
    spread = round_ratios(rounds["skulk"], rounds["llama-server"])
    figures[ENGINE_ALONE] = {"ttft_ms": statistics.median(s.ttft for s in engine) * 1000,
                               "decode_tps": statistics.median(s.decode_tps for s in engine)}
    report(figures, spread, args)
    write(figures, spread, args)
    return 0


def rotated(names: tuple[str, ...], round_: int) -> tuple[str, ...]:
    """The servers in this round's order: each takes each place in turn, so a machine
    that speeds up or slows down during a run (this one drifts by 10-20% within minutes)
    favours none of them."""
    shift = round_ % len(names)
    return names[shift:] + names[:shift]


if __name__ == "__main__":
    sys.exit(main())
