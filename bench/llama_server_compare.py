"""Skulk's llama.cpp engine against llama.cpp's own `llama-server`, on the same GGUF.

    .venv/bin/python bench/llama_server_compare.py [--repeats 3] [--max-tokens 128]
                                                   [--threads N] [--streams 1 4 8]
                                                   [--parallel 4] [--gpu-layers N]
                                                   [--llama-server PATH] [--name NAME]
                                                   [--results-dir DIR] [--client-cores C..]

`llama-server` is built from the llama.cpp vendored in the installed llama-cpp-python's
sdist (bench/llama_server_build.py, cached in bench/.cache; ~5 minutes the first time).
Three servers and the engine alone, `--repeats` rounds:
  skulk            `skulk run --serve smollm2-135m` (continuous batching, 4 sequences)
  skulk-unbatched  the same with `--no-batching` (one request at a time)
  llama-server     `-np 4 -t <threads> -c 8192 -kvu` (4 slots sharing one context's cells,
                   as Skulk's sequences do by default), its other defaults untouched
  engine-alone     bench/engine_alone.py kept up in a process of its own, its engine's
                   loop writing each token's event straight to the client's socket
                   (bench/bare_http.py: no node, no runner pipe, no framework), streamed
                   by the same client: the gap between it and `skulk` is the node's
                   serving path, and it shows how near llama-server any server around
                   this engine can come
Each round starts all four and warms each up, then measures them in alternation, item by
item (bench/server_turns.py): each of the 4 single-stream prompts, then each aggregate
row, is measured once per server, back to back, before the next item. Whoever is not
being measured is frozen with SIGSTOP (every process of it: a Skulk node and its runner),
and thawed with SIGCONT for its turn, which settles for a moment and opens with a short
request of its own. The order rotates item by item and round by round, so each takes
each place equally often. Measured each in its own minute, as before, a round's ratio
was mostly this machine's drift (10-20 % within minutes); interleaved, the drift over
more than a few seconds cancels.
`--threads` (default: every core) is the engine's compute threads in all three and in the
engine alone. Below the core count, a core is left to the serving path, as on a machine
with more cores than the model's threads use. The same `openai` client streams from each
server, greedy. Figures: time to first token and decode tokens/s of one stream alone
(medians over prompts and rounds), and aggregate tokens/s with `--streams` streams (1, 4
and 8 by default) each sending `--per-stream` requests back to back (medians over
rounds); CPU per generated token of each process, summed over a server's turns.
`--parallel` is the requests decoded at once by each server (Skulk's `max_batch`,
llama-server's slots; 4 by default). On a GPU (bench/gpu_check): `--gpu-layers` puts
that many layers on it in llama-server and the engine alone (Skulk's master chooses its
own from the GPU's free memory), `--llama-server` names a CUDA build, and `--name` keeps
the result apart from the CPU runs the site charts. Beside each ratio of medians, the
range of Skulk / llama-server within single rounds; below the table, each row's
round-to-round standard deviation of that ratio, and how many rounds would put the
mean's gap from 1.0 two standard errors clear of it. Each prompt is made unique, so no
server reuses another request's prompt beyond the chat template's shared system prompt,
and every contender is asked the same prompts (tagged by round, item and row, never by
server: a server's name in its prompts gave each a prompt of another length and answers
of other lengths, bench/history/serving-path.md).
`--client-cores` runs the client (this process's streaming threads) on those cores only
and every server and the engine alone on the others (`--threads` defaulting to their
count), as if the client were another machine: on two cores, which core the client's
Python lands on otherwise moves a server's round by several per cent
(bench/history/serving-path.md).
"""

import argparse
import os
import signal
import statistics
import sys
import threading
import time
from collections.abc import Callable
from contextlib import AbstractContextManager, ExitStack
from pathlib import Path

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
from bench.server_turns import (  # noqa: E402
    PARALLEL,
    Contender,
    CpuMeter,
    engine_alone,
    pinned,
    thawed_on_exit,
    turn,
    turn_order,
    wait_node_calibrated,
    wait_node_idle,
)

# Named as exports: bench/server_threads.py starts its servers through this module.
from bench.server_turns import llama_cpp_server as llama_cpp_server  # noqa: E402
from bench.server_turns import skulk_server as skulk_server  # noqa: E402

PROMPTS = [
    "Explain why the sky is blue in a few sentences.",
    "Write a short story about a fox in the snow.",
    "List five uses for a paperclip and explain each one.",
    "Describe how a bicycle works.",
]
CONCURRENCY = (1, 4, 8)
# Skulk's max_batch tops out at 64 (LlamaCppOptions).
MOST_PARALLEL = 64

Server = Callable[[], AbstractContextManager[tuple[str, str, dict[str, int]]]]
Aggregate = Callable[[int, str], tuple[float, int]]  # streams, tag


# The servers whose `completion_tokens` also counts the end-of-generation token sampled
# after the last piece of text (its text is empty): llama-server reports 98 for an answer
# of 97 pieces that ended on its own. Skulk's count, like the engine alone's, is the
# tokens that carry text. Every server decodes that last token after the last piece, so
# outside the decode window (first piece to last) and in every aggregate's wall time; it is
# left out of llama-server's count, so that each row divides the same tokens by the time.
COUNTS_END_TOKEN = frozenset({"llama-server"})


def stream(client: openai.OpenAI, model: str, prompt: str, max_tokens: int,
           counts_end_token: bool = False) -> Sample:
    """One streamed request, greedy: its first token's time, the tokens that carry text
    (`counts_end_token`: the server's usage counts the end-of-generation token too, which
    is taken off when the answer ended on its own), and the decode's seconds."""
    started = time.perf_counter()
    first = last = None
    pieces = 0
    usage_tokens = None
    finish = None
    for chunk in client.chat.completions.create(
            model=model, messages=[{"role": "user", "content": prompt}], temperature=0,
            max_tokens=max_tokens, stream=True, stream_options={"include_usage": True}):
        if chunk.usage is not None:
            usage_tokens = chunk.usage.completion_tokens
        if chunk.choices and chunk.choices[0].finish_reason is not None:
            finish = chunk.choices[0].finish_reason
        if chunk.choices and chunk.choices[0].delta.content:
            last = time.perf_counter()
            first = first or last
            pieces += 1
    assert first is not None and last is not None, "no tokens came back"
    tokens = usage_tokens or pieces
    if counts_end_token and usage_tokens and finish == "stop":
        tokens -= 1
    return Sample(first - started, tokens, last - first)


def aggregate(client: openai.OpenAI, model: str, streams: int, per_stream: int,
              max_tokens: int, tag: str, counts_end_token: bool = False,
              ) -> tuple[float, int]:
    """Tokens per second over all streams, from the first request to the last end, and
    how many tokens that was."""
    counts = [0] * streams
    failures: list[BaseException] = []

    def user(index: int) -> None:
        try:
            for turn_ in range(per_stream):
                prompt = f"({tag} user {index} turn {turn_}) {PROMPTS[(index + turn_) % 4]}"
                counts[index] += stream(client, model, prompt, max_tokens,
                                        counts_end_token).tokens
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


def served(stack: ExitStack, name: str, server: Server,
           args: argparse.Namespace) -> tuple[Contender, Aggregate]:
    """`server` started and warmed up, as a contender, and how to run an aggregate row
    on it."""
    url, model, pids = stack.enter_context(server())
    client = openai.OpenAI(base_url=url, api_key="unused", max_retries=0, timeout=600)
    stream(client, model, "Say hello.", 8)  # warm up
    end_token = name in COUNTS_END_TOKEN
    node = pids.get("node")
    if node is not None:
        wait_node_calibrated(node)
    contender = Contender(
        name, lambda prompt, tokens: stream(client, model, prompt, tokens, end_token),
        [node] if node is not None else list(pids.values()),
        # The client's own CPU too (this process: the streaming threads), which every
        # contender's row pays.
        CpuMeter({**pids, "client": os.getpid()}),
        idle=(lambda: wait_node_idle(url.removesuffix("/v1"))) if node is not None
        else lambda: None)
    return contender, lambda streams, tag: aggregate(client, model, streams, args.per_stream,
                                                     args.max_tokens, tag, end_token)


def measure_round(servers: dict[str, Server], gguf: Path, round_: int,
                  args: argparse.Namespace) -> tuple[dict[str, Round], list[Sample]]:
    """One round: everyone started, then every item measured once per contender in this
    round's rotating order; every contender stopped at its end."""
    results = {name: Round() for name in SERVERS}
    engine: list[Sample] = []
    with ExitStack() as stack:
        contenders: dict[str, Contender] = {}
        aggregates: dict[str, Aggregate] = {}
        for name in SERVERS:
            with pinned(args.server_cores):
                contenders[name], aggregates[name] = served(stack, name, servers[name], args)
            # Registered after its start, so it runs before its stop.
            stack.enter_context(thawed_on_exit([contenders[name]]))
        with pinned(args.server_cores):
            url, model, pids = stack.enter_context(
                engine_alone(gguf, args.threads, args.gpu_layers))
        client = openai.OpenAI(base_url=url, api_key="unused", max_retries=0, timeout=600)
        contenders[ENGINE_ALONE] = Contender(
            ENGINE_ALONE, lambda prompt, tokens: stream(client, model, prompt, tokens),
            list(pids.values()), CpuMeter({}))
        stack.enter_context(thawed_on_exit([contenders[ENGINE_ALONE]]))
        for contender in contenders.values():
            contender.freeze()
        for index, prompt in enumerate(PROMPTS):
            for name in turn_order(SERVERS + (ENGINE_ALONE,), round_, index):
                contender = contenders[name]
                with turn(contender), contender.meter.measuring():
                    sample = contender.ask(f"({round_}.{index}) {prompt}", args.max_tokens)
                (engine if name == ENGINE_ALONE else results[name].alone).append(sample)
        for name in SERVERS:
            tokens = sum(s.tokens for s in results[name].alone)
            for process, ms in contenders[name].meter.per_token(tokens).items():
                results[name].cpu_ms_per_token[f"{process}_alone"] = ms
        for row, streams in enumerate(args.streams):
            for name in turn_order(SERVERS, round_, row):
                contender = contenders[name]
                with turn(contender), contender.meter.measuring():
                    tps, tokens = aggregates[name](streams, f"{round_}.{streams}")
                results[name].aggregate[streams] = tps
                for process, ms in contenders[name].meter.per_token(tokens).items():
                    results[name].cpu_ms_per_token[f"{process}_{streams}_streams"] = ms
    print_round(results, engine, round_)
    return results, engine


def print_round(results: dict[str, Round], engine: list[Sample], round_: int) -> None:
    for name, result in results.items():
        alone = statistics.median(s.decode_tps for s in result.alone)
        print(f"  {name} round {round_}: alone {alone:.1f} tok/s, "
              + ", ".join(f"{k} streams {v:.1f} tok/s" for k, v in result.aggregate.items()),
              flush=True)
    print(f"  engine alone round {round_}: "
          f"{statistics.median(s.decode_tps for s in engine):.1f} tok/s", flush=True)


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
    parser.add_argument("--client-cores", type=int, nargs="+", default=None,
                        help="cores the client runs on, the servers on the others, as if "
                             "the client were another machine (default: shared)")
    args = parser.parse_args()
    # The servers' cores when the client has its own, else None: the scheduler places all.
    args.server_cores = None
    if args.client_cores is not None:
        cores, every = set(args.client_cores), os.sched_getaffinity(0)
        if not cores <= every or not every - cores:
            parser.error(f"--client-cores must name cores of {sorted(every)} and leave the "
                         "servers at least one")
        args.server_cores = every - cores
        args.threads = args.threads or len(args.server_cores)
        os.sched_setaffinity(0, cores)  # this thread streams; the aggregates' inherit it
    # A SIGTERM (a `timeout`, a CI step's limit) unwinds like an exception, so frozen
    # servers are thawed and stopped rather than left stopped for good.
    signal.signal(signal.SIGTERM, lambda signum, _: sys.exit(128 + signum))
    from skulk.testing.models import bundled_gguf

    gguf = bundled_gguf()
    binary = args.llama_server or llama_server()
    servers: dict[str, Server] = {
        "skulk": lambda: skulk_server(True, args.threads, args.parallel),
        "skulk-unbatched": lambda: skulk_server(False, args.threads, args.parallel),
        "llama-server": lambda: llama_cpp_server(binary, gguf, args.threads, args.parallel,
                                                 args.gpu_layers)}
    rounds: dict[str, list[Round]] = {name: [] for name in SERVERS}
    engine: list[Sample] = []
    for round_ in range(args.repeats):
        results, samples = measure_round(servers, gguf, round_, args)
        for name in SERVERS:
            rounds[name].append(results[name])
        engine += samples
    figures = {name: summary(rounds[name]) for name in SERVERS}
    spread = round_ratios(rounds["skulk"], rounds["llama-server"])
    figures[ENGINE_ALONE] = {"ttft_ms": statistics.median(s.ttft for s in engine) * 1000,
                               "decode_tps": statistics.median(s.decode_tps for s in engine)}
    report(figures, spread, args)
    write(figures, spread, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
