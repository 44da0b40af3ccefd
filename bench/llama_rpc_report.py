"""bench/llama_rpc.py's figures from its samples: medians, CPU and wake-ups per decoded
token by process, what the security costs, the report it prints and the result it writes."""

import statistics
from typing import Any

from bench.llama_patches import describe, installed_patches
from bench.results import write_result

LATENCIES_MS = (0.2, 1.0)  # a LAN's round trip, switched and routed
TARGET_DECODE, TARGET_TTFT = 0.85, 1.2
# A split token sends at least the hidden state (576 floats) to the device: less means the
# head ran every layer itself.
LEAST_SPLIT_BYTES_PER_TOKEN = 2000


def median_figures(samples: dict[str, list[dict[str, Any]]]) -> dict[str, dict[str, float]]:
    """Per configuration: median TTFT (ms), median decode tokens/s, and the link's bytes
    per decoded token (both ways, as host 0's eth0 counts them)."""
    figures = {}
    for name, runs in samples.items():
        decoded = sum(run["tokens_after_first"] for run in runs)
        wire = sum(run["decode_rx_bytes"] + run["decode_tx_bytes"] for run in runs)
        figures[name] = {
            "ttft_ms": statistics.median(run["ttft"] for run in runs) * 1000,
            "decode": statistics.median(run["tokens_after_first"] / run["decode_seconds"]
                                        for run in runs),
            "wire_bytes_per_token": wire / decoded}
    return figures


def readings_per_token(runs: list[dict[str, Any]], reading: str) -> dict[str, float]:
    """Each process's `reading` per decoded token over the runs: `cpu`, its CPU time, and
    `runq`, how long it waited runnable for a core, in ms; `wakes`, how many times it was
    woken."""
    decoded = sum(run["tokens_after_first"] for run in runs)
    prefix = f"decode_{reading}_"
    scale = 1 if reading == "wakes" else 1000
    return {key.removeprefix(prefix): sum(run[key] for run in runs) * scale / decoded
            for key in runs[0] if key.startswith(prefix)}


def cpu_per_token(runs: list[dict[str, Any]]) -> dict[str, float]:
    """Milliseconds per decoded token, summed over the runs: wall time, and the CPU time
    of each process the head watched (and its own)."""
    decoded = sum(run["tokens_after_first"] for run in runs)
    return {"wall": sum(run["decode_seconds"] for run in runs) * 1000 / decoded,
            **readings_per_token(runs, "cpu")}


def print_cpu(samples: dict[str, list[dict[str, Any]]]) -> None:
    print("ms per decoded token (means): wall, and CPU of each process; the rest is waiting "
          "(the link, wake-ups, other work on the cores), and of that, how long each "
          "process waited runnable for its core (the cores' other work)")
    for name, runs in samples.items():
        costs = cpu_per_token(runs)
        busy = sum(value for key, value in costs.items() if key != "wall")
        parts = ", ".join(f"{key} {value:.2f}" for key, value in costs.items())
        queued = ", ".join(f"{key} {value:.2f}"
                           for key, value in readings_per_token(runs, "runq").items())
        woken = ", ".join(f"{key} {value:.1f}"
                          for key, value in readings_per_token(runs, "wakes").items())
        print(f"  {name:8} {parts}; waiting {costs['wall'] - busy:.2f} (for a core: "
              f"{queued}); wake-ups per token: {woken}")


def security_cpu_per_token(samples: dict[str, list[dict[str, Any]]]) -> dict[str, float]:
    """What the security costs in CPU per decoded token, in ms, two ways. `head`,
    `device`, `total`: the secured split's head and device processes (TLS on their own
    threads; no other process is on the path) less the direct split's, which carries the
    noise of ~15 ms of compute a token. `channel_head`, `channel_device`, `channel`: the
    CPU inside the channel's send and recv themselves (TLS and the socket calls, which
    the direct split makes too: an upper bound on what TLS adds), the head's over its
    decode, the device's over each whole request divided by its decoded tokens; and
    `tls_*`, the same less the socket calls: what the TLS work itself takes."""
    secured, direct = cpu_per_token(samples["secured"]), cpu_per_token(samples["direct"])
    extra = {name: secured[name] - direct[name] for name in ("head", "device")}
    runs = samples["secured"]
    decoded: int = sum(run["tokens_after_first"] for run in runs)

    def per_token(key: str) -> float:
        spent: float = sum(run[key] for run in runs)
        return spent * 1000 / decoded

    channel = {"channel_head": per_token("decode_channel_head"),
               "channel_device": per_token("channel_device")}
    tls = {"tls_head": channel["channel_head"] - per_token("decode_channelsocket_head"),
           "tls_device": channel["channel_device"] - per_token("channelsocket_device")}
    return {**extra, "total": sum(extra.values()), **channel,
            "channel": sum(channel.values()), **tls, "tls": sum(tls.values())}


def check_split(figures: dict[str, dict[str, float]]) -> None:
    """Refuse figures of a "split" whose layers never left the head."""
    for name in ("direct", "secured"):
        crossed = figures[name]["wire_bytes_per_token"]
        if crossed < LEAST_SPLIT_BYTES_PER_TOKEN:
            raise SystemExit(f"{name}: only {crossed:.0f} B per token crossed the link, so "
                             "the head ran every layer itself; no split was measured")


def differing_texts(samples: dict[str, list[dict[str, Any]]]) -> list[str]:
    """Which requests' greedy text differs from the whole model's."""
    whole = [run["text"] for run in samples["whole"]]
    return [f"{name} request {index}: {run['text'][:60]!r} vs {whole[index][:60]!r}"
            for name, runs in samples.items() for index, run in enumerate(runs)
            if run["text"] != whole[index]]


def print_report(samples: dict[str, list[dict[str, Any]]], load_seconds: dict[str, float],
                 rounds: dict[str, float], max_tokens: int, rate: str) -> None:
    figures = median_figures(samples)
    check_split(figures)
    whole = figures["whole"]
    requests = len(samples["whole"])
    print(f"{requests} requests per configuration, greedy, max_tokens={max_tokens}, medians;"
          f" one thread per rank, host i on core i, links capped at {rate}")
    print(f"{'':10}{'TTFT ms':>10}{'decode tok/s':>14}{'TTFT ratio':>12}"
          f"{'decode ratio':>14}{'load s':>8}{'wire B/token':>14}")
    for name, row in figures.items():
        print(f"{name:10}{row['ttft_ms']:10.1f}{row['decode']:14.1f}"
              f"{row['ttft_ms'] / whole['ttft_ms']:12.2f}{row['decode'] / whole['decode']:14.2f}"
              f"{load_seconds[name]:8.2f}{row['wire_bytes_per_token']:14.0f}")
    secured = figures["secured"]
    print(f"targets: decode >= {TARGET_DECODE}x (secured "
          f"{secured['decode'] / whole['decode']:.2f}x), TTFT <= {TARGET_TTFT}x (secured "
          f"{secured['ttft_ms'] / whole['ttft_ms']:.2f}x); secured/direct decode "
          f"{secured['decode'] / figures['direct']['decode']:.2f}")
    hop = 1000 / figures["direct"]["decode"] - 1000 / whole["decode"]
    security = 1000 / secured["decode"] - 1000 / figures["direct"]["decode"]
    print(f"per-token cost: a hop {hop:.3f} ms, the security {security:.3f} ms; first "
          f"token: a hop {figures['direct']['ttft_ms'] - whole['ttft_ms']:+.1f} ms, the "
          f"security {secured['ttft_ms'] - figures['direct']['ttft_ms']:+.1f} ms")
    print_cpu(samples)
    security_cpu = security_cpu_per_token(samples)
    print("the security's CPU per decoded token (secured minus direct, schedstat): "
          + ", ".join(f"{key} {value:.3f} ms" for key, value in security_cpu.items()))
    patches = installed_patches()
    print(f"llama.cpp: {describe(patches)}")
    write_result("llama_rpc", {
        "max_tokens": max_tokens, "rate": rate, "llama_cpp_patches": patches,
        "security_cpu_ms_per_token": security_cpu,
        "counted_per_token": {key.removesuffix("_per_token"): value
                              for key, value in rounds.items() if key.endswith("_per_token")},
        "configurations": {
            name: {"ttft_ms": row["ttft_ms"], "decode_tps": row["decode"],
                   "load_s": load_seconds[name],
                   "wire_bytes_per_token": row["wire_bytes_per_token"],
                   "cpu_ms_per_token": cpu_per_token(samples[name]),
                   "runqueue_ms_per_token": readings_per_token(samples[name], "runq"),
                   "wakes_per_token": readings_per_token(samples[name], "wakes")}
            for name, row in figures.items()}})
    differing = differing_texts(samples)
    print("greedy text identical across whole, direct and secured in all "
          f"{requests} requests" if not differing else "greedy text DIFFERS:\n  "
          + "\n  ".join(differing))
    per_token, to_first = rounds["answers_per_token"], rounds["answers_to_first"]
    print(f"counted through a proxy: {per_token:.2f} round trips per decoded token "
          f"({to_first:.1f} until the first), payload {rounds['to_device_per_token']:.0f} B "
          f"to the device and {rounds['to_head_per_token']:.0f} B back per token, in "
          f"{rounds['to_device_reads_per_token']:.2f} sends and "
          f"{rounds['to_head_reads_per_token']:.2f} replies (the proxy's reads)")
    print("COMPUTED, not measured: secured split with a network round trip L added to each")
    for latency in LATENCIES_MS:
        decode = 1 / (1 / secured["decode"] + per_token * latency / 1000)
        ttft = secured["ttft_ms"] + to_first * latency
        print(f"  L = {latency} ms: decode {decode:.1f} tok/s ({decode / whole['decode']:.2f}x)"
              f", TTFT {ttft:.1f} ms ({ttft / whole['ttft_ms']:.2f}x)")
