"""Where a token's time goes outside llama.cpp: each decode step timed inside the process
that runs it, the engine alone against the runner serving a reader that does nothing.

    .venv/bin/python bench/step_gaps.py [--rounds 3] [--max-tokens 128] [--threads N]
                                        [--streams K] [--quick]

Two modes, alternated round by round on the bundled GGUF, greedy, `--streams` requests
decoding together (1 by default; K copies of each prompt, submitted at once):
  engine  the llama.cpp engine in this process (as bench/engine_alone.py runs it)
  runner  a real runner process (`bootstrap.entrypoint`, the node's pipes and frames) fed
          by this process, which reads its frames and does nothing else: no node, no HTTP
Both wrap `llama_decode` with a clock (and, in the runner, its one pipe write per step)
and report, per step of one token for each of the K requests: the decode call, the gap
from one decode's end to the next one's start (all the Python of a step: sampling, text,
the frame and its write), the gap's parts around the write, and decode tokens/s (all K)
from the steps' starts. With K > 1 the runner may take the requests a step or more apart
(they arrive as they are sent), so fewer of its steps carry all K than the engine's. On
two cores with two compute threads a gap is time both cores spend outside compute (the
second thread spins at OpenMP's barrier), so a microsecond of it is a microsecond of the
token.
`--quick`: one round of two prompts of 64 tokens (about 30 s).
"""

import argparse
import multiprocessing
import os
import statistics
import sys
import time
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.llama_server_compare import PROMPTS  # noqa: E402
from bench.results import write_result  # noqa: E402

from skulk.shared.types.ids import CommandId, InstanceId, ModelId, NodeId, TaskId  # noqa: E402
from skulk.shared.types.tasks import (  # noqa: E402
    ChatMessage,
    GenerationParams,
    TextGenerationTask,
)
from skulk.worker.engines.description import EngineDescription  # noqa: E402
from skulk.worker.engines.llama_cpp import sequences_lib  # noqa: E402
from skulk.worker.engines.llama_cpp.description import LLAMA_CPP, LlamaCppOptions  # noqa: E402
from skulk.worker.engines.llama_cpp.engine import LlamaCppEngine  # noqa: E402
from skulk.worker.engines.protocol import EngineConfig  # noqa: E402
from skulk.worker.runner import messages, pipe_frames  # noqa: E402
from skulk.worker.runner.bootstrap import entrypoint  # noqa: E402

CONTEXT = 8192
WRITE = -1  # a stamp's kind: the runner's pipe write; otherwise the decode's token count
Stamp = tuple[int, int, int]


def clock_steps(stamps: list[Stamp]) -> None:
    """Record every `llama_decode` call and pipe write of this process into `stamps`."""
    decode = sequences_lib.SequenceContext.decode
    write = pipe_frames.FrameWriter._write

    def timed_decode(self: sequences_lib.SequenceContext, entries: Any) -> bool:
        started = time.perf_counter_ns()
        done = decode(self, entries)
        stamps.append((started, time.perf_counter_ns(), len(entries)))
        return done

    def timed_write(self: Any, data: bytes) -> None:
        started = time.perf_counter_ns()
        write(self, data)
        stamps.append((started, time.perf_counter_ns(), WRITE))

    sequences_lib.SequenceContext.decode = timed_decode  # type: ignore[method-assign]
    pipe_frames.FrameWriter._write = timed_write  # type: ignore[method-assign]


def config(threads: int) -> EngineConfig:
    from skulk.testing.models import bundled_gguf
    return EngineConfig(model_path=str(bundled_gguf()), context_token_limit=CONTEXT,
                        n_threads=threads, options=LlamaCppOptions(max_batch=4))


def params(prompt: str, max_tokens: int) -> GenerationParams:
    return GenerationParams(model_id=ModelId("bench"), temperature=0.0, max_tokens=max_tokens,
                            messages=[ChatMessage(role="user", content=prompt)])


def engine_steps(prompts: list[str], max_tokens: int, threads: int,
                 streams: int = 1) -> list[list[Stamp]]:
    stamps: list[Stamp] = []
    clock_steps(stamps)
    engine = LlamaCppEngine(config(threads))
    engine.load()
    engine.warm_up()
    requests = []
    for prompt in prompts:
        stamps.clear()
        if streams == 1:
            for _ in engine.generate(params(prompt, max_tokens)):
                pass
        else:
            for copy in range(streams):
                engine.submit(TaskId(f"{prompt} #{copy}"), params(f"#{copy} {prompt}",
                                                                  max_tokens))
            while engine.has_work:
                engine.step()
        requests.append(list(stamps))
    return requests


def timed_entrypoint(engine: EngineDescription, engine_config: EngineConfig,
                     inbox: Connection, outbox: Connection, parent_pid: int,
                     results: Connection) -> None:
    """The runner's own entry point with its steps clocked; the stamps go back at exit."""
    stamps: list[Stamp] = []
    clock_steps(stamps)
    try:
        entrypoint(engine, engine_config, inbox, outbox, parent_pid)
    finally:
        results.send(stamps)


def runner_steps(prompts: list[str], max_tokens: int, threads: int,
                 streams: int = 1) -> list[list[Stamp]]:
    context = multiprocessing.get_context("spawn")
    inbox, to_runner = context.Pipe(duplex=False)
    from_runner, outbox = context.Pipe(duplex=False)
    results, results_end = context.Pipe(duplex=False)
    runner = context.Process(target=timed_entrypoint, daemon=True, args=(
        LLAMA_CPP, config(threads), inbox, outbox, os.getpid(), results_end))
    runner.start()
    inbox.close()
    outbox.close()
    frames = pipe_frames.FrameReader(messages.FROM_RUNNER, messages.TOKENS_PLAIN)

    def send(message: messages.ToRunner) -> None:
        os.write(to_runner.fileno(), pipe_frames.encode([message]))

    def read_until(done: Any) -> None:
        while True:
            data = os.read(from_runner.fileno(), 1 << 16)
            assert data, "the runner exited"
            if any(done(message) for message in frames.feed(data)):
                return

    send(messages.LoadModelRequest())
    send(messages.WarmUpRequest())
    read_until(lambda m: isinstance(m, messages.StatusReport) and m.status.kind == "ready")
    for index, prompt in enumerate(prompts):
        for copy in range(streams):
            send(messages.StartTaskRequest(task=TextGenerationTask(
                task_id=TaskId(f"t{index}.{copy}"), command_id=CommandId(f"c{index}.{copy}"),
                instance_id=InstanceId("bench"), owner_node=NodeId("bench"),
                params=params(prompt if streams == 1 else f"#{copy} {prompt}", max_tokens))))
        ended = [0]

        def all_ended(message: messages.FromRunner, ended: list[int] = ended) -> bool:
            ended[0] += isinstance(message, messages.TaskEnded)
            return ended[0] == streams

        read_until(all_ended)
    send(messages.ShutdownRequest())
    stamps: list[Stamp] = results.recv()
    runner.join(30)
    return split_requests(stamps, streams)


def split_requests(stamps: list[Stamp], streams: int = 1) -> list[list[Stamp]]:
    """The runner's stamps cut where a prompt was prefilled (a decode of more tokens than
    the requests decoding together), dropping the warm-up's."""
    requests: list[list[Stamp]] = []
    for stamp in stamps:
        if stamp[2] > streams:
            requests.append([])
        if requests:
            requests[-1].append(stamp)
    return requests[1:]


def figures(requests: list[list[Stamp]], streams: int = 1) -> dict[str, float]:
    """Medians over every step of one token for each of `streams` requests (µs; tokens/s
    of them all)."""
    decodes, gaps, before, writes, after, rates = [], [], [], [], [], []
    for stamps in requests:
        steps = [s for s in stamps if s[2] == streams]
        if len(steps) > 2:
            rates.append(streams * (len(steps) - 1) * 1e9 / (steps[-1][0] - steps[0][0]))
        for index, (start, end, kind) in enumerate(stamps[:-1]):
            if kind != streams:
                continue
            decodes.append((end - start) / 1000)
            following = stamps[index + 1: index + 3]
            write = following[0] if following and following[0][2] == WRITE else None
            nxt = following[1] if write is not None and len(following) > 1 else following[0]
            if nxt[2] != streams:
                continue
            gaps.append((nxt[0] - end) / 1000)
            if write is not None:
                before.append((write[0] - end) / 1000)
                writes.append((write[1] - write[0]) / 1000)
                after.append((nxt[0] - write[1]) / 1000)
    row = {"decode_us": statistics.median(decodes), "gap_us": statistics.median(gaps),
           "tokens_per_s": statistics.median(rates), "steps": float(len(gaps))}
    if writes:
        row |= {"gap_before_write_us": statistics.median(before),
                "write_us": statistics.median(writes),
                "gap_after_write_us": statistics.median(after)}
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--max-tokens", type=int, default=128)
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--streams", type=int, default=1,
                        help="requests decoding together (at most 4, the runner's batch)")
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    rounds, prompts = (1, PROMPTS[:2]) if args.quick else (args.rounds, PROMPTS)
    max_tokens = 64 if args.quick else args.max_tokens
    modes = {"engine": engine_steps, "runner": runner_steps}
    measured: dict[str, list[list[Stamp]]] = {name: [] for name in modes}
    for round_ in range(rounds):
        for name in list(modes)[round_ % 2:] + list(modes)[:round_ % 2]:
            tagged = [f"({round_}.{i}) {p}" for i, p in enumerate(prompts)]  # the same for both
            if name == "engine":  # in a process of its own, as the runner has
                with multiprocessing.get_context("spawn").Pool(1) as pool:
                    requests = pool.apply(engine_steps, (tagged, max_tokens, args.threads,
                                                         args.streams))
            else:
                requests = runner_steps(tagged, max_tokens, args.threads, args.streams)
            measured[name] += requests
            print(f"  round {round_} {name}: " + ", ".join(
                f"{k} {v:.1f}" for k, v in figures(requests, args.streams).items()),
                flush=True)
    results = {name: figures(requests, args.streams) for name, requests in measured.items()}
    for name, row in results.items():
        print(f"{name:7s} " + "  ".join(f"{k} {v:.1f}" for k, v in row.items()))
    write_result("step_gaps", {"rounds": rounds, "max_tokens": max_tokens,
                               "threads": args.threads, "streams": args.streams,
                               "load_average": os.getloadavg(),
                               "modes": results})
    return 0


if __name__ == "__main__":
    sys.exit(main())
