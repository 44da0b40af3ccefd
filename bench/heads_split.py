"""The MLX heads split across two simulated machines, beside one node on one core.

    .venv/bin/python bench/heads_split.py            # the full run (tens of minutes)
    .venv/bin/python bench/heads_split.py --quick    # 8 tokens, one repeat, 1gbit only
        [--shapes qwen2.5-0.5b,llama-3.2-1b] [--rates 1gbit,200mbit] [--dtype float32]
        [--streams 4,8]  # "" for single stream only (bf16)
    .venv/bin/python bench/heads_split.py --recheck bench/results/heads_split-....json
        # placement's predictions again, from constants measured now, against that run's
        # measurements (no root, seconds)

Models: random-weight models of two real shapes, built with mlx-lm's own ModelArgs and
model classes (`skulk.testing.random_family`) and the bundled SmolLM2 tokenizer (so the
vocabulary is 49,152, not the shapes' own): Qwen2.5-0.5B's layers (24 layers, hidden
896, 14 query / 2 KV heads, MLP 4,864) and Llama-3.2-1B's (16 layers, hidden 2,048, 32
/ 8 heads, MLP 8,192). Random weights time like real ones; the figures name the shapes.
They are written once into `--models` and reused.

Each rank is the MLX engine in its own process, network namespace (`skulk.testing.netns`,
its outgoing rate capped with `tc tbf`) and pinned core, as bench/mlx_sharding.py runs
its pipeline; the one node runs alone, first on core 0 and last on core 1, and the
better of the two is the baseline (figure by figure). Reported per
shape: single-stream TTFT and decode tokens/s, aggregate tokens/s at 4 and 8 streams;
per token the collectives (two per layer, two for the step), the bytes of each and the
measured µs of one (a chain of all-reduces in one graph, on the ring itself); and by
arithmetic what a LAN's (0.5 ms) and a Wi-Fi's (5 ms) round trip would add per token,
since this kernel has no netem. Then placement's predictions for the same configurations
against the measured figures (bench/heads_split_prediction.py).

Needs root (network namespaces).
"""

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "src"))

from bench.heads_split_prediction import (  # noqa: E402
    calibrate_decode,
    calibrate_read_rate,
    check,
    print_check,
)
from bench.mlx_sharding import (  # noqa: E402
    RANK_SCRIPT,
    RING_PORT,
    cap,
    machine_busy_seconds,
    rank_environment,
    run_processes,
)
from bench.results import write_result  # noqa: E402
from tests.speculative_support import bundled_mlx_model  # noqa: E402

from skulk.testing.netns import Hosts, missing  # noqa: E402

ROUND_TRIPS_MS = {"LAN": 0.5, "Wi-Fi": 5.0}
# A run is quiet when everyone else used less than this share of a core meanwhile.
QUIET_OTHERS_CORES = 0.15
STREAMS = [4, 8]
SHAPES: dict[str, dict[str, Any]] = {
    "qwen2.5-0.5b": {"model_type": "qwen2", "num_hidden_layers": 24, "hidden_size": 896,
                     "num_attention_heads": 14, "num_key_value_heads": 2,
                     "intermediate_size": 4864, "rope_theta": 1000000.0,
                     "rms_norm_eps": 1e-6, "tie_word_embeddings": True,
                     "max_position_embeddings": 32768},
    "llama-3.2-1b": {"model_type": "llama", "num_hidden_layers": 16, "hidden_size": 2048,
                     "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 64,
                     "intermediate_size": 8192, "rope_theta": 500000.0,
                     "rms_norm_eps": 1e-5, "tie_word_embeddings": True,
                     "max_position_embeddings": 131072},
}
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json")


def build_model(models: Path, shape: str, dtype: str) -> Path:
    """The random-weight model of `shape` in `dtype` with the bundled tokenizer (built
    once into `models`)."""
    import json

    import mlx.core as mx

    from skulk.testing.random_family import random_weights

    target = models / f"{shape}-random-{dtype}"
    if (target / "model.safetensors").is_file():
        return target
    tokenizer_dir = bundled_mlx_model(models)
    vocab = int(json.loads((tokenizer_dir / "config.json").read_text())["vocab_size"])
    config = {**SHAPES[shape], "vocab_size": vocab, "torch_dtype": dtype}
    print(f"building {target.name} ...", flush=True)
    weights = random_weights(config, seed=0)
    cast = {name: value.astype(getattr(mx, dtype)) for name, value in weights.items()}
    partial = models / f".{target.name}.partial"
    partial.mkdir(parents=True, exist_ok=True)
    mx.save_safetensors(str(partial / "model.safetensors"), cast, metadata={"format": "mlx"})
    (partial / "config.json").write_text(json.dumps(config, indent=2))
    for name in TOKENIZER_FILES:
        shutil.copy(tokenizer_dir / name, partial / name)
    partial.rename(target)
    return target


def rank_spec(model: Path, rank: int, ranks: int, n_layers: int, args: argparse.Namespace,
              probe: dict[str, Any] | None) -> dict[str, Any]:
    hosts = [f"10.77.0.{host + 1}:{RING_PORT}" for host in range(ranks)]
    spec: dict[str, Any] = {
        "model": str(model), "rank": rank, "hosts": hosts if ranks > 1 else ["solo"],
        "layers": [0, n_layers], "tokens": args.tokens, "repeats": args.repeats,
        "streams": args.streams, "max_batch": max([1, *args.streams]), "micro_batches": False,
        "sharding": "tensor"}
    if probe is not None:
        spec["collective_probe"] = probe
    return spec


def wait_until_quiet(longest_seconds: float) -> float:
    """Wait (up to `longest_seconds`) for 5 s in which the machine's other work used less
    than QUIET_OTHERS_CORES; the cores used in the last 5 s looked at."""
    deadline = time.monotonic() + longest_seconds
    while True:
        before = machine_busy_seconds()
        time.sleep(5)
        used = (machine_busy_seconds() - before) / 5
        if used < QUIET_OTHERS_CORES or time.monotonic() > deadline:
            return used


def run(hosts: Hosts, model: Path, ranks: int, args: argparse.Namespace, log_dir: Path,
        label: str, probe: dict[str, Any] | None = None, first_core: int = 0
        ) -> dict[str, Any]:
    import json

    if args.wait_quiet:
        used = wait_until_quiet(args.wait_quiet)
        print(f"  (others used {used:.2f} of a core in the 5 s before)", flush=True)
    n_layers = int(json.loads((model / "config.json").read_text())["num_hidden_layers"])
    commands = [hosts.command(rank, [sys.executable, str(RANK_SCRIPT), json.dumps(
        rank_spec(model, rank, ranks, n_layers, args, probe))], core=first_core + rank)
        for rank in range(ranks)]
    print(f"  {label} ...", flush=True)
    return run_processes(commands, rank_environment(model), log_dir, label)


def collectives_per_token(config: dict[str, Any]) -> int:
    """All-reduces one decode step makes: one after attention and one after the MLP per
    layer, then the step's control agreement and its tokens."""
    return 2 * int(config["num_hidden_layers"]) + 2


def link_figures(split: dict[str, Any], config: dict[str, Any]) -> dict[str, Any]:
    """Collectives per token, their measured cost, and decode tok/s with a LAN's and a
    Wi-Fi's round trip added to each (by arithmetic)."""
    count = collectives_per_token(config)
    per_token_ms = 1000 / split["single"]["decode_tps"]
    one_row = split.get("collectives", {}).get("rows-1", {})
    figures: dict[str, Any] = {
        "collectives_per_token": count, "bytes_each": one_row.get("bytes"),
        "measured_us_each": one_row.get("us"),
        "collective_ms_per_token": round(count * one_row.get("us", 0) / 1000, 2),
        "collectives_at_8_rows": split.get("collectives", {}).get("rows-8")}
    for name, rtt in ROUND_TRIPS_MS.items():
        figures[f"decode_tps_with_{name}_rtt"] = round(1000 / (per_token_ms + count * rtt), 2)
    return figures


def shape_run(hosts: Hosts, shape: str, args: argparse.Namespace, models: Path,
              log_dir: Path) -> dict[str, Any]:
    import json

    model = build_model(models, shape, args.dtype)
    config = json.loads((model / "config.json").read_text())
    probe = {"hidden": int(config["hidden_size"]), "dtype": args.dtype, "rows": [0, 1, 8]}
    cap(hosts, "off")
    first = run(hosts, model, 1, args, log_dir, f"{shape}-one")
    splits: dict[str, dict[str, Any]] = {}
    for rate in args.rates.split(","):
        cap(hosts, rate)
        splits[rate] = run(hosts, model, 2, args, log_dir, f"{shape}-{rate}", probe)
        splits[rate]["link"] = link_figures(splits[rate], config)
    cap(hosts, "off")
    # The last one node runs on the other core: on a shared machine others' pinned work
    # may load one core more, and the baseline is the better of the two, figure by figure
    # (on a quiet machine the two agree).
    last = run(hosts, model, 1, args, log_dir, f"{shape}-one-last", first_core=1)
    one = {"single": {"ttft_s": min(first["single"]["ttft_s"], last["single"]["ttft_s"]),
                      **{key: max(first["single"][key], last["single"][key])
                         for key in ("decode_tps", "decode_best_tps")}},
           **{f"streams-{n}": max(first[f"streams-{n}"], last[f"streams-{n}"])
              for n in args.streams}}
    ratios = {rate: {"decode": round(s["single"]["decode_tps"] / one["single"]["decode_tps"], 3),
                     "decode_best": round(s["single"]["decode_best_tps"]
                                          / one["single"]["decode_best_tps"], 3),
                     "ttft": round(s["single"]["ttft_s"] / one["single"]["ttft_s"], 3),
                     **{f"streams-{n}": round(s[f"streams-{n}"] / one[f"streams-{n}"], 3)
                        for n in args.streams}}
              for rate, s in splits.items()}
    others = max(run["others_cores"] for run in [first, last, *splits.values()])
    quiet = others <= QUIET_OTHERS_CORES
    result = {"shape": shape, "config": config, "one_node": one, "streams": args.streams,
              "one_node_runs": [first, last], "heads_split": splits, "ratios": ratios,
              "conditions": {"quiet": quiet, "others_cores_max": others}}
    result["prediction"] = check(model, result, calibrate_read_rate(0),
                                 calibrate_decode(0, rank_environment(model)))
    return result


def print_shape(result: dict[str, Any]) -> None:
    one, streams = result["one_node"], result["streams"]
    print(f"\n{result['shape']} ({result['config']['torch_dtype']}, random weights)")
    print("| configuration | TTFT | decode tok/s (fastest token) | "
          + "".join(f"{n} streams | " for n in streams)
          + "decode ratio (fastest) | TTFT ratio |")
    print("|---|---|---|" + "---|" * len(streams) + "---|---|")
    print(f"| 1 node, 1 core | {one['single']['ttft_s'] * 1000:.0f} ms | "
          f"{one['single']['decode_tps']:.2f} ({one['single']['decode_best_tps']:.2f}) | "
          + "".join(f"{one[f'streams-{n}']:.2f} | " for n in streams) + "1.00 | 1.00 |")
    for rate, split in result["heads_split"].items():
        ratio = result["ratios"][rate]
        print(f"| 2 ranks by heads, {rate} | {split['single']['ttft_s'] * 1000:.0f} ms | "
              f"{split['single']['decode_tps']:.2f} ({split['single']['decode_best_tps']:.2f})"
              " | " + "".join(f"{split[f'streams-{n}']:.2f} | " for n in streams)
              + f"{ratio['decode']:.2f} ({ratio['decode_best']:.2f}) | {ratio['ttft']:.2f} |")
    for rate, split in result["heads_split"].items():
        link = split["link"]
        print(f"{rate}: {link['collectives_per_token']} collectives per token of "
              f"{link['bytes_each']} B, {link['measured_us_each']} µs each "
              f"({link['collective_ms_per_token']} ms per token); with a LAN round trip "
              f"{link['decode_tps_with_LAN_rtt']} tok/s, with Wi-Fi's "
              f"{link['decode_tps_with_Wi-Fi_rtt']} tok/s")
    print_check(result["prediction"])
    conditions = result["conditions"]
    if not conditions["quiet"]:
        print(f"NOT A RESULT: others used up to {conditions['others_cores_max']:.2f} of a "
              "core meanwhile (the fastest-token figures are the less disturbed ones)")


def recheck(result_file: Path, models: Path) -> int:
    """Placement's predictions from constants measured now against an earlier run."""
    import json

    recorded = json.loads(result_file.read_text())["results"]
    for shape in recorded["shapes"]:
        model = build_model(models, shape["shape"], recorded["dtype"])
        shape["prediction"] = check(model, shape, calibrate_read_rate(0),
                                    calibrate_decode(0, rank_environment(model)))
        print(f"\n{shape['shape']} ({recorded['dtype']}), measured in {result_file.name}")
        print_check(shape["prediction"])
    write_result("heads_split_recheck", {
        "measured_in": result_file.name, "dtype": recorded["dtype"],
        "predictions": {shape["shape"]: shape["prediction"] for shape in recorded["shapes"]}})
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="8 tokens, one repeat, 1gbit only (a few minutes)")
    parser.add_argument("--tokens", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--rates", default="1gbit,200mbit")
    parser.add_argument("--shapes", default=",".join(SHAPES))
    parser.add_argument("--dtype", default="float32", choices=["float32", "bfloat16"])
    parser.add_argument("--streams", default=",".join(map(str, STREAMS)),
                        help="aggregate runs at these stream counts (comma-separated; "
                             "empty for single-stream only, as bf16's slow path wants)")
    parser.add_argument("--wait-quiet", type=float, default=0.0, metavar="SECONDS",
                        help="before each configuration, wait up to SECONDS for 5 quiet "
                             "seconds (a shared machine's others below 0.15 of a core)")
    parser.add_argument("--models", type=Path, default=Path(os.environ.get(
        "SKULK_BENCH_MODELS", Path(tempfile.gettempdir()) / "skulk-bench-models")))
    parser.add_argument("--recheck", type=Path, metavar="RESULT_JSON",
                        help="measure the decode constants now and check the predictions "
                             "against that earlier run's figures (no runs, no root)")
    args = parser.parse_args()
    args.streams = [int(n) for n in args.streams.split(",") if n]
    if args.recheck:
        return recheck(args.recheck, args.models)
    if args.quick:
        args.tokens, args.repeats, args.rates = 8, 1, "1gbit"
    if (reason := missing()) is not None:
        print(f"needs network namespaces: {reason}", file=sys.stderr)
        return 2
    results = []
    with tempfile.TemporaryDirectory() as scratch, Hosts(2) as hosts:
        log_dir = Path(scratch)
        for shape in args.shapes.split(","):
            results.append(shape_run(hosts, shape, args, args.models, log_dir))
            print_shape(results[-1])
    write_result("heads_split", {"tokens": args.tokens, "repeats": args.repeats,
                                 "quick": args.quick, "dtype": args.dtype,
                                 "shapes": results})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
