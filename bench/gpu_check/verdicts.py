"""The GPU check's verdicts, from plain figures: each check passes, fails or is skipped
with its reason and figures, each step has a time budget, and the run passes when every
check that ran passed. Also the issue's targets for the comparison with llama-server,
reported beside the checks (a missed target is a finding, not a broken run)."""

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Literal

from bench.gpu_check.nvidia import NvidiaGpu

MIB = 1024**2
Mode = Literal["cuda", "cpu"]
Figure = float | int | str | bool | None

# What a process's CUDA context and llama.cpp's compute buffers may take beyond the
# weights and KV the admission counts (the runner's context alone is ~0.5 GiB on Hopper).
CUDA_CONTEXT_ALLOWANCE_BYTES = 1024 * MIB

# Seconds each step may take on the device, summing to the 9 minutes (540 s) the whole
# run is meant to end in. Expected (not yet seen on a device): install ~10, the CUDA
# build for one architecture on 16 cores 180-300, the stand-in ~5, two nodes ~10, the
# whole placement on the GPU ~10, the client ~5, the split ~15, the comparison's four
# entries (Skulk batched and not, llama-server, the engine alone) ~60.
BUDGET_SECONDS: dict[str, float] = {
    "install": 30, "build": 300, "stand-in": 15, "nodes": 25, "whole": 30, "client": 15,
    "split": 35, "bench": 90,
}
RUN_BUDGET_SECONDS = 9 * 60

# Skulk / llama-server on the device (the targets): at least this on decode and at
# the most streams, at most this on time to first token.
TARGET_DECODE_RATIO = 0.95
TARGET_AGGREGATE_RATIO = 0.95
TARGET_TTFT_RATIO = 1.1


@dataclass
class Check:
    name: str
    passed: bool | None  # None: skipped
    detail: str
    figures: dict[str, Figure] = field(default_factory=dict)


@dataclass
class Step:
    name: str
    budget_seconds: float
    seconds: float = 0.0
    checks: list[Check] = field(default_factory=list)
    error: str | None = None

    @property
    def over_budget(self) -> bool:
        return self.seconds > self.budget_seconds

    @property
    def passed(self) -> bool:
        return self.error is None and all(c.passed is not False for c in self.checks)


def skipped(name: str, why: str) -> Check:
    return Check(name, None, why)


def telemetry(mode: Mode, reported: Sequence[Mapping[str, object]],
              smi: Sequence[NvidiaGpu]) -> Check:
    """The node's GPU telemetry names every GPU nvidia-smi lists, as CUDA, with the same
    memory; on a machine without one it reports no CUDA GPU."""
    cuda = [gpu for gpu in reported if gpu.get("backend") == "cuda"]
    figures: dict[str, Figure] = {
        "reported": ", ".join(f"{g.get('name')} {int(str(g.get('vram_total_bytes'))) // MIB} MiB"
                              for g in cuda) or "none",
        "nvidia_smi": ", ".join(f"{g.name} {g.total_bytes // MIB} MiB" for g in smi) or "none"}
    if mode == "cpu" or not smi:
        ok = not cuda and not smi if mode == "cpu" else False
        why = ("no CUDA GPU here, and none reported" if ok else
               "nvidia-smi lists no GPU" if mode == "cuda" else
               "a CUDA GPU reported or listed on a CPU-only run")
        return Check("telemetry names the GPU", ok, why, figures)
    wanted = sorted((g.name, g.total_bytes) for g in smi)
    seen = sorted((str(g.get("name")), int(str(g.get("vram_total_bytes")))) for g in cuda)
    ok = wanted == seen
    return Check("telemetry names the GPU", ok,
                 "the node reports what nvidia-smi lists" if ok
                 else "the node's GPUs differ from nvidia-smi's", figures)


def every_layer_on_gpu(mode: Mode, candidate: Mapping[str, object] | None,
                       block_count: int) -> Check:
    """The master's default placement of the model on one node puts every layer on the
    GPU (none on a CPU-only machine)."""
    if candidate is None:
        return Check("every layer on the GPU", False, "no candidate placement was offered")
    nodes = candidate.get("nodes")
    rank = nodes[0] if isinstance(nodes, list) and nodes else {}
    layers = int(rank.get("gpu_layers", 0)) if isinstance(rank, dict) else 0
    vram = int(rank.get("vram_needed_bytes", 0)) if isinstance(rank, dict) else 0
    figures: dict[str, Figure] = {"gpu_layers": layers, "block_count": block_count,
                                  "vram_admitted_mib": round(vram / MIB, 1),
                                  "fits": bool(candidate.get("fits"))}
    if mode == "cpu":
        ok = layers == 0 and bool(candidate.get("fits"))
        return Check("every layer on the GPU", ok,
                     "CPU-only: placed with no layer on a GPU" if ok
                     else "CPU-only, yet layers were given to a GPU", figures)
    ok = layers >= block_count and bool(candidate.get("fits"))
    return Check("every layer on the GPU", ok,
                 f"{layers} of {block_count} layers on the GPU", figures)


def vram_admission(mode: Mode, admitted_bytes: int, used_before: int, used_after: int
                   ) -> Check:
    """What loading the model took on the GPU (nvidia-smi's used memory after less
    before) against the admission's figure: the admission may not under-count by more
    than a CUDA context's allowance (an under-count risks running out of memory)."""
    if mode == "cpu":
        return skipped("VRAM admission against nvidia-smi", "no GPU on a CPU-only run")
    measured = used_after - used_before
    figures: dict[str, Figure] = {
        "admitted_mib": round(admitted_bytes / MIB, 1), "measured_mib": round(measured / MIB, 1),
        "measured_over_admitted": round(measured / admitted_bytes, 3) if admitted_bytes else None}
    ok = 0 < measured <= admitted_bytes + CUDA_CONTEXT_ALLOWANCE_BYTES
    return Check("VRAM admission against nvidia-smi", ok,
                 f"loading took {measured / MIB:.0f} MiB, admitted {admitted_bytes / MIB:.0f} "
                 f"MiB (+{CUDA_CONTEXT_ALLOWANCE_BYTES // MIB} MiB allowed for the context)",
                 figures)


def answered(name: str, text: str | None, tokens: int) -> Check:
    ok = bool(text) and tokens > 0
    return Check(name, ok, f"{tokens} tokens" if ok else "no answer",
                 {"tokens": tokens, "text": (text or "")[:80]})


def embedding(vector: Sequence[float], width: int) -> Check:
    ok = (len(vector) == width and all(math.isfinite(v) for v in vector)
          and any(v != 0 for v in vector))
    return Check("embeddings", ok, f"a vector of {len(vector)} (the model's width {width})",
                 {"length": len(vector)})


def json_answer(text: str | None, allowed: Sequence[str]) -> Check:
    """The constrained answer parses and holds one of the schema's allowed values."""
    try:
        value = json.loads(text or "")
    except ValueError:
        return Check("JSON-schema answer", False, "not JSON", {"text": (text or "")[:80]})
    ok = isinstance(value, dict) and set(value) == {"answer"} and value["answer"] in allowed
    return Check("JSON-schema answer", ok, "matches the schema" if ok else "off the schema",
                 {"text": (text or "")[:80]})


def split_on_two_nodes(mode: Mode, ranks: Sequence[Mapping[str, object]],
                       device_server_gpu_bytes: int | None) -> Check:
    """A pipeline split over the two nodes, its device server (rank 1's runner) holding
    GPU memory on a GPU run."""
    nodes = {str(rank.get("node_id")) for rank in ranks}
    figures: dict[str, Figure] = {"ranks": len(ranks), "nodes": len(nodes),
                                  "device_server_gpu_mib": None if device_server_gpu_bytes
                                  is None else round(device_server_gpu_bytes / MIB, 1)}
    if len(ranks) != 2 or len(nodes) != 2:
        return Check("2-node split, device server on the GPU", False,
                     f"{len(ranks)} ranks on {len(nodes)} nodes", figures)
    if mode == "cpu":
        return Check("2-node split, device server on the GPU", True,
                     "split over 2 nodes (CPU-only: no GPU to hold)", figures)
    ok = bool(device_server_gpu_bytes)
    return Check("2-node split, device server on the GPU", ok,
                 "rank 1's device server holds GPU memory" if ok
                 else "rank 1's device server holds no GPU memory", figures)


def targets(ratios: Mapping[str, float], most_streams: int) -> dict[str, dict[str, Figure]]:
    """Skulk / llama-server against the issue's targets, row by row."""
    rows = {"decode_tps": (TARGET_DECODE_RATIO, "at least"),
            f"aggregate_{most_streams}_tps": (TARGET_AGGREGATE_RATIO, "at least"),
            "ttft_ms": (TARGET_TTFT_RATIO, "at most")}
    met: dict[str, dict[str, Figure]] = {}
    for key, (bound, how) in rows.items():
        ratio = ratios.get(key)
        ok = None if ratio is None else (ratio >= bound if how == "at least" else ratio <= bound)
        met[key] = {"ratio": None if ratio is None else round(ratio, 3),
                    "target": f"{how} {bound}", "met": ok}
    return met


def serving_share(skulk: Mapping[str, float], most_streams: int) -> dict[str, Figure]:
    """What share of each token's time the node's serving path (the node process's CPU
    per token, beside the runner's compute) takes: one stream alone, and at the most
    streams (a token's time there is the aggregate's). Near 1: the serving path is the
    limit at this speed."""
    shares: dict[str, Figure] = {}
    for label, node_key, rate_key in (
            ("alone", "cpu_ms_per_token_node_alone", "decode_tps"),
            (f"{most_streams}_streams", f"cpu_ms_per_token_node_{most_streams}_streams",
             f"aggregate_{most_streams}_tps")):
        node_ms, rate = skulk.get(node_key), skulk.get(rate_key)
        shares[label] = (None if node_ms is None or not rate
                         else round(node_ms / (1000.0 / rate), 3))
    return shares


def summary(mode: Mode, quick: bool, steps: Sequence[Step], gpu: NvidiaGpu | None,
            extra: Mapping[str, object]) -> dict[str, object]:
    """The result JSON: every step with its checks, budget and time, and the verdict."""
    return {
        "mode": mode, "quick": quick,
        "gpu": None if gpu is None else {
            "name": gpu.name, "compute_capability": gpu.compute_capability,
            "memory_total_mib": gpu.total_bytes // MIB},
        "passed": all(step.passed for step in steps) and bool(steps),
        "seconds": round(sum(step.seconds for step in steps), 1),
        "over_budget": [step.name for step in steps if step.over_budget],
        "steps": [{**asdict(step), "passed": step.passed, "seconds": round(step.seconds, 1)}
                  for step in steps],
        **extra,
    }
