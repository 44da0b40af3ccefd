"""bench/heads_split.py's check of placement's predictions: what `skulk place --prefer
speed` would predict for one node and for 2 ranks by heads, from the same inputs a node
has (its decode constants measured as a node measures them, `skulk.fitting.decode_probe`
in a runner's environment on one core; the model's bytes and shape; the link's round
trip and rate), against what the bench measured (within 25 %). The prediction a node
without those constants makes (one core's memory read rate x DECODE_READ_EFFICIENCY) is
checked beside it.

The link's round trip is the ring's own: one all-reduce of a single value on the
simulated link (the prober's TCP connect time plays that part between real nodes).
"""

import subprocess
import sys
from pathlib import Path
from typing import Any

from skulk.fitting.speed import (
    Link,
    ModelTraffic,
    RankSpeed,
    decode_read_rate,
    decode_tokens_per_second,
)
from skulk.master.placement.speed import DECODE_READ_EFFICIENCY
from skulk.shared.types.telemetry import DecodeCalibration

TOLERANCE = 0.25
RATES_BYTES_PER_SECOND = {"1gbit": 1e9 / 8, "200mbit": 200e6 / 8}
ROUND_TRIPS = {"LAN (0.5 ms, 1 Gbit)": (0.0005, 1e9 / 8),
               "Wi-Fi (5 ms, 200 Mbit)": (0.005, 200e6 / 8)}


def calibrate_read_rate(core: int) -> float:
    """One core's memory read rate, measured as a node measures it, on `core`."""
    code = ("from skulk.fitting.speed import memory_read_bytes_per_second as m; "
            "print(m())")
    out = subprocess.run(["taskset", "-c", str(core), sys.executable, "-c", code],
                         capture_output=True, text=True, check=True, timeout=120)
    return float(out.stdout.strip())


def calibrate_decode(core: int, environment: dict[str, str]) -> DecodeCalibration:
    """The decode constants, measured as a node measures them (in a runner's environment,
    here `environment`), on `core`."""
    out = subprocess.run(["taskset", "-c", str(core), sys.executable, "-m",
                          "skulk.fitting.decode_probe"], capture_output=True, text=True,
                         check=True, timeout=300, env=environment)
    return DecodeCalibration.model_validate_json(out.stdout)


def traffic_of(model: Path, config: dict[str, Any]) -> ModelTraffic:
    dtype_bytes = 2 if config.get("torch_dtype") == "bfloat16" else 4
    return ModelTraffic(weights_bytes=(model / "model.safetensors").stat().st_size,
                        n_layers=int(config["num_hidden_layers"]),
                        hidden_size=int(config["hidden_size"]), activation_bytes=dtype_bytes)


def check(model: Path, result: dict[str, Any], raw_read_rate: float,
          calibration: DecodeCalibration) -> dict[str, Any]:
    """Predicted against measured single-stream decode, per configuration, from the
    decode constants and (beside them) from the memory rate alone; and the predictions
    for a LAN's and a Wi-Fi's link, where the split should win and lose."""
    traffic = traffic_of(model, result["config"])
    calibrated = RankSpeed(decode_read_rate(calibration.rates(), traffic.hidden_size),
                           calibration.layer_seconds)
    fallback = RankSpeed(raw_read_rate * DECODE_READ_EFFICIENCY)
    rows, fallback_rows = _against_measured(traffic, result, calibrated), \
        _against_measured(traffic, result, fallback)
    one = decode_tokens_per_second(traffic, "tensor", [calibrated], None)
    links = {name: round(decode_tokens_per_second(traffic, "tensor", [calibrated] * 2,
                                                  Link(rtt, bps)), 3)
             for name, (rtt, bps) in ROUND_TRIPS.items()}
    return {"calibration": calibration.model_dump(mode="json"),
            "read_bytes_per_second_at_width": round(calibrated.read_bytes_per_second),
            "against_measured": rows, "within_tolerance": all(r["within"] for r in rows.values()),
            "raw_read_bytes_per_second": round(raw_read_rate),
            "decode_read_efficiency": DECODE_READ_EFFICIENCY,
            "memory_rate_only": fallback_rows,
            "predicted_heads_split_tps": links, "predicted_one_node_tps": round(one, 3),
            "heads_split_predicted_to_lose_on": [name for name, tps in links.items()
                                                 if tps < one]}


def _against_measured(traffic: ModelTraffic, result: dict[str, Any], rank: RankSpeed
                      ) -> dict[str, dict[str, Any]]:
    one = decode_tokens_per_second(traffic, "tensor", [rank], None)
    rows = {"1 node": _row(one, result["one_node"]["single"])}
    for link_rate, split in result["heads_split"].items():
        round_trip = split["collectives"]["rows-0"]["us"] / 1e6
        link = Link(round_trip, RATES_BYTES_PER_SECOND.get(link_rate, 1e9 / 8))
        predicted = decode_tokens_per_second(traffic, "tensor", [rank, rank], link)
        rows[f"2 ranks by heads, {link_rate}"] = _row(predicted, split["single"])
    return rows


def _row(predicted: float, measured: dict[str, Any]) -> dict[str, Any]:
    error = predicted / measured["decode_tps"] - 1
    best_error = predicted / measured["decode_best_tps"] - 1
    return {"predicted_tps": round(predicted, 3), "measured_tps": round(measured["decode_tps"], 3),
            "error": round(error, 3), "error_vs_fastest_token": round(best_error, 3),
            "within": abs(error) <= TOLERANCE or abs(best_error) <= TOLERANCE}


def print_check(prediction: dict[str, Any]) -> None:
    calibration = prediction["calibration"]
    rates = ", ".join(f"{rate['width']}: {rate['bytes_per_second'] / 1e9:.2f}"
                      for rate in calibration["read_rates"])
    print(f"predictions from the decode constants (one-row products read GB/s by width "
          f"{rates}; {calibration['layer_seconds'] * 1000:.2f} ms per layer):")
    _print_rows(prediction["against_measured"])
    print(f"  from the memory rate alone ({prediction['raw_read_bytes_per_second'] / 1e9:.1f} "
          f"GB/s raw x {prediction['decode_read_efficiency']}):")
    _print_rows(prediction["memory_rate_only"])
    for name, tps in prediction["predicted_heads_split_tps"].items():
        print(f"  2 ranks by heads over {name}: predicted {tps} tok/s against one node's "
              f"{prediction['predicted_one_node_tps']}")


def _print_rows(rows: dict[str, dict[str, Any]]) -> None:
    for label, row in rows.items():
        print(f"  {label}: predicted {row['predicted_tps']} tok/s, measured "
              f"{row['measured_tps']} ({row['error']:+.0%}; {row['error_vs_fastest_token']:+.0%}"
              f" against the fastest token) {'ok' if row['within'] else 'OUTSIDE 25%'}")
