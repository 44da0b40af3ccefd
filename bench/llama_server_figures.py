"""llama_server_compare.py's figures: medians per server, Skulk / llama-server within each
round, the printed table with its noise lines, and the result JSON."""

import argparse
import math
import os
import statistics
from dataclasses import dataclass, field

from bench.chat_latency import Sample
from bench.results import write_result

SERVERS = ("skulk", "skulk-unbatched", "llama-server")
ENGINE_ALONE = "engine-alone"


@dataclass
class Round:
    alone: list[Sample] = field(default_factory=list)
    aggregate: dict[int, float] = field(default_factory=dict)
    # CPU milliseconds per generated token of each of the server's processes (Skulk: the
    # node, which carries the per-token path, and the runner, which computes), alone and
    # at the most streams: where a token's time goes.
    cpu_ms_per_token: dict[str, float] = field(default_factory=dict)


def summary(rounds: list[Round]) -> dict[str, float]:
    alone = [s for r in rounds for s in r.alone]
    figures = {"ttft_ms": statistics.median(s.ttft for s in alone) * 1000,
               "decode_tps": statistics.median(s.decode_tps for s in alone)}
    for streams in rounds[0].aggregate:
        figures[f"aggregate_{streams}_tps"] = statistics.median(r.aggregate[streams]
                                                                for r in rounds)
    for key in rounds[0].cpu_ms_per_token:
        figures[f"cpu_ms_per_token_{key}"] = statistics.median(r.cpu_ms_per_token[key]
                                                               for r in rounds)
    return figures


def round_figures(round_: Round) -> dict[str, float]:
    return {"ttft_ms": statistics.median(s.ttft for s in round_.alone) * 1000,
            "decode_tps": statistics.median(s.decode_tps for s in round_.alone),
            **{f"aggregate_{n}_tps": tps for n, tps in round_.aggregate.items()}}


def round_ratios(skulk: list[Round], baseline: list[Round]) -> dict[str, list[float]]:
    """Skulk / llama-server within each round, by row: how far one round's ratio can be
    from the medians' (the machine drifts more between rounds than within one)."""
    pairs = [(round_figures(s), round_figures(b)) for s, b in zip(skulk, baseline, strict=True)]
    return {key: [s[key] / b[key] for s, b in pairs] for key in pairs[0][0]}


def rows(streams: list[int]) -> list[tuple[str, str]]:
    """The table's rows: one stream's figures, then an aggregate row per stream count."""
    return [("ttft_ms", "time to first token, ms"),
            ("decode_tps", "decode, one stream, tok/s")] + [
        (f"aggregate_{n}_tps", f"{n} streams, aggregate tok/s") for n in streams]


def report(figures: dict[str, dict[str, float]], spread: dict[str, list[float]],
           args: argparse.Namespace) -> None:
    print(f"\n{args.repeats} rounds, interleaved item by item, max_tokens={args.max_tokens}, "
          f"greedy, medians; {os.cpu_count()} cores, {args.threads or os.cpu_count()} "
          f"compute threads, {args.parallel} sequences/slots each")
    print(f"{'':32}{'skulk':>10}{'unbatched':>11}{'llama-server':>14}{'ratio':>8}"
          f"{'batching buys':>15}   ratio round by round")
    for key, label in rows(args.streams):
        s, u, ls = (figures[name][key] for name in SERVERS)
        print(f"{label:32}{s:10.1f}{u:11.1f}{ls:14.1f}{s / ls:8.2f}{s / u:14.2f}x"
              f"   {min(spread[key]):.2f}-{max(spread[key]):.2f}")
    print("\nround-to-round noise of Skulk / llama-server, by row (" + str(args.repeats)
          + " rounds): standard deviation, and the rounds whose mean would put the"
            " gap from 1.0 at two standard errors")
    for key, label in rows(args.streams):
        sd, needed = noise(spread[key])
        print(f"  {label:32} sd {sd:.3f}   rounds to resolve {needed}")
    alone = figures[ENGINE_ALONE]
    served = figures["skulk"]["decode_tps"]
    print(f"\nthe engine alone (its loop writing to a bare socket, the same client): "
          f"time to first token "
          f"{alone['ttft_ms']:.1f} ms, decode {alone['decode_tps']:.1f} tok/s "
          f"({alone['decode_tps'] / figures['llama-server']['decode_tps']:.2f}x llama-server); "
          f"served, Skulk keeps {served / alone['decode_tps']:.2f} of it")
    print("\nCPU ms per generated token, by process (medians over rounds):")
    for name in SERVERS:
        cpu = {key.removeprefix("cpu_ms_per_token_"): value
               for key, value in figures[name].items() if key.startswith("cpu_ms_per_token_")}
        print(f"  {name:16}" + "  ".join(f"{key} {value:.2f}" for key, value in cpu.items()))


def write(figures: dict[str, dict[str, float]], spread: dict[str, list[float]],
          args: argparse.Namespace) -> None:
    # A run with fewer threads than cores is a different benchmark: the site charts the
    # default's newest run.
    name = args.name or "llama_server_compare" + (
        "" if args.threads is None else f"_{args.threads}_threads") + (
        "" if args.client_cores is None else "_client_apart")
    write_result(name, {
        "repeats": args.repeats, "max_tokens": args.max_tokens,
        "threads": args.threads or os.cpu_count(),
        "per_stream": args.per_stream, "parallel": args.parallel, "streams": args.streams,
        "gpu_layers": args.gpu_layers,
        # The client on cores of its own and the servers on the rest (None: shared).
        "client_cores": args.client_cores,
        "server_cores": None if args.server_cores is None else sorted(args.server_cores),
        # The servers took turns item by item, the idle ones frozen (server_turns.py);
        # runs without this key measured each server in a window of its own.
        "interleaved": True, "figures": figures,
        # The engine alone streamed by the same client from a bare socket (bare_http.py);
        # runs without this key timed it in its own process, with no client at all.
        "engine_alone_over": "bare_http",
        "ratios": {key: figures["skulk"][key] / figures["llama-server"][key]
                   for key, _ in rows(args.streams)},
        "round_ratios": spread,
        "round_ratio_noise": {key: dict(zip(("sd", "rounds_to_resolve"), noise(spread[key]),
                                            strict=True)) for key, _ in rows(args.streams)}},
        directory=args.results_dir)


def noise(ratios: list[float]) -> tuple[float, int | None]:
    """The spread of one row's round-by-round ratios (their standard deviation), and how
    many rounds it would take for the mean's gap from 1.0 to stand two standard errors
    clear of the noise (None: one round, or no gap at all)."""
    if len(ratios) < 2:
        return 0.0, None
    sd = statistics.stdev(ratios)
    gap = abs(statistics.mean(ratios) - 1.0)
    return sd, None if gap == 0 else max(len(ratios), math.ceil((2 * sd / gap) ** 2))
