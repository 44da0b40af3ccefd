"""A token's time cut at llama.cpp's edges, in llama-server and in Skulk's runner, and who
takes the stepping thread's core between two decodes. Needs root and `perf`.

    .venv/bin/python bench/decode_split.py [--rounds 2] [--max-tokens 128] [--threads N]

Both servers as llama_server_compare.py starts them, one at a time in alternating
rounds, each streaming the four prompts to the `openai` client, greedy. `perf` uprobes on
the entry and return of llama.cpp's decode (`llama_decode`; llama-server calls
`llama_process`, the same `llama_context::decode` underneath) and of
`ggml_backend_sched_graph_compute_async`, placed on the library files each server's
process maps (from /proc/PID/maps: a pip build's `lib/` holds copies of each library
under several names, and a probe on a copy never fires), recorded system-wide with the
scheduler's `sched_switch`. Per single-token step (medians, µs): llama.cpp's work before
the graph, the graph, its work after, and the caller's gap from one decode's return to
the next one's entry (sampling, text, the frame or the server's dispatch, and whatever
ran on that core meanwhile); the long graphs (a prompt's prefill, ms); and every time the
thread that steps, or its compute helpers, were preempted, by whom, inside a graph or in
the gap, and for how long. The probes' traps cost a few µs a call, alike in both.
"""

import argparse
import os
import re
import signal
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import openai

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.llama_server_build import llama_server  # noqa: E402
from bench.llama_server_compare import PROMPTS, stream  # noqa: E402
from bench.results import write_result  # noqa: E402
from bench.server_turns import llama_cpp_server, skulk_server  # noqa: E402

from skulk.testing.models import bundled_gguf  # noqa: E402

GROUP = "skulkbench"  # the uprobes' group, removed at exit
PROBES = {  # probe name: (library, symbol)
    "decode": ("libllama", "llama_decode"),
    "process": ("libllama", "llama_process"),
    "graph": ("libggml-base", "ggml_backend_sched_graph_compute_async"),
}
PREFILL_MS = 12.0  # a graph longer than this is a prompt's, not one token's
SAME_STEP_S = 0.05  # a caller's gap longer than this is between requests


@dataclass(frozen=True)
class Event:
    """One line of `perf script`: a probe's hit or a context switch."""

    tid: int
    time: float  # seconds
    name: str  # "decode", "decode_ret", "graph", "graph_ret" or "switch"
    prev_tid: int = 0  # a switch's: who left the core, and whether still runnable
    prev_runnable: bool = False
    next_tid: int = 0
    next_comm: str = ""


_LINE = re.compile(r"^\s*(\d+)\s+\[\d+\]\s+([\d.]+):\s+(\S+):\s*(.*)$")


def parse(script: str) -> list[Event]:
    """`perf script -F tid,cpu,time,event,trace` lines as events (others skipped); both
    decode symbols count as "decode"."""
    events = []
    for line in script.splitlines():
        match = _LINE.match(line)
        if match is None:
            continue
        tid, stamp, event, trace = match.groups()
        group, _, probe = event.partition(":")
        if event == "sched:sched_switch":
            fields = dict(re.findall(r"(\w+)=(\S+)", trace))
            comm = trace.split("next_comm=", 1)[1].split(" next_pid=", 1)[0] \
                if "next_comm=" in trace else ""
            events.append(Event(int(tid), float(stamp), "switch",
                                prev_tid=int(fields.get("prev_pid", 0)),
                                prev_runnable=fields.get("prev_state", "").startswith("R"),
                                next_tid=int(fields.get("next_pid", 0)), next_comm=comm))
        elif group == GROUP:
            name = probe.removesuffix("__return")  # "<tag>_<probe>[_ret]"
            ret = name.endswith("_ret")
            base = name.removesuffix("_ret").split("_", 1)[-1]
            kind = "graph" if base == "graph" else "decode"
            events.append(Event(int(tid), float(stamp), kind + ("_ret" if ret else "")))
    return events


def _collapsed(events: list[Event], tids: set[int]) -> list[Event]:
    """The probe hits of `tids`, a repeated hit dropped (a call through the library's own
    PLT fires the entry probe twice and the return probe twice: the outer ones count)."""
    kept: list[Event] = []
    for event in events:
        if event.name == "switch" or event.tid not in tids:
            continue
        if kept and kept[-1].name == event.name:
            if event.name.endswith("_ret"):
                kept[-1] = event
            continue
        kept.append(event)
    return kept


def split(events: list[Event], tids: set[int]) -> dict[str, object]:
    """Medians per single-token step (µs) of llama.cpp before and after the graph, the
    graph and the caller's gap; the prompts' graphs (ms); steps counted."""
    hits = _collapsed(events, tids)
    parts: dict[str, list[float]] = {"before_us": [], "graph_us": [], "after_us": [],
                                     "caller_us": []}
    prefills = []
    names = [event.name for event in hits]
    for index in range(len(hits) - 1):
        if names[index] == "graph" and names[index + 1] == "graph_ret":
            took = hits[index + 1].time - hits[index].time
            if took * 1000 > PREFILL_MS:
                prefills.append(round(took * 1000, 1))
    for index in range(len(hits) - 4):
        if names[index:index + 5] != ["decode", "graph", "graph_ret", "decode_ret", "decode"]:
            continue
        stamps = [event.time for event in hits[index:index + 5]]
        if stamps[2] - stamps[1] > PREFILL_MS / 1000 or stamps[4] - stamps[3] > SAME_STEP_S:
            continue
        for name, (start, end) in zip(parts, ((0, 1), (1, 2), (2, 3), (3, 4)), strict=True):
            parts[name].append((stamps[end] - stamps[start]) * 1e6)
    row: dict[str, object] = {name: round(statistics.median(values)) if values else None
                              for name, values in parts.items()}
    return row | {"steps": len(parts["caller_us"]), "prefill_ms": prefills}


def preemptions(events: list[Event], tids: set[int]) -> list[dict[str, object]]:
    """Every time a thread of `tids` left its core still runnable, until it ran again: by
    whom (the thread that steps, or a compute helper), inside a graph or between graphs;
    counts, total and median ms/µs, the largest totals first."""
    stepping: int | None = None
    in_graph = False
    off: dict[int, tuple[float, str]] = {}
    spans: dict[tuple[str, str, str], list[float]] = defaultdict(list)
    for event in events:
        if event.name in ("graph", "graph_ret") and event.tid in tids:
            in_graph, stepping = event.name == "graph", event.tid
        elif event.name == "switch":
            if event.prev_tid in tids and event.prev_runnable:
                where = "graph" if in_graph else "gap"
                off[event.prev_tid] = (event.time, f"{where}|{event.next_comm}")
            if event.next_tid in off:
                left, key = off.pop(event.next_tid)
                where, comm = key.split("|", 1)
                thread = "stepping" if event.next_tid == stepping else "helper"
                spans[(thread, where, comm)].append((event.time - left) * 1e6)
    rows = [{"thread": thread, "in": where, "by": comm, "times": len(values),
             "total_ms": round(sum(values) / 1000, 1),
             "median_us": round(statistics.median(values))}
            for (thread, where, comm), values in spans.items()]
    return sorted(rows, key=lambda row: -float(str(row["total_ms"])))


def mapped_library(pid: int, library: str) -> Path | None:
    """The file `pid` maps as `library` (e.g. "libllama": libllama.so or libllama.so.0.5.0,
    whichever it loaded)."""
    for line in Path(f"/proc/{pid}/maps").read_text().splitlines():
        path = line.split()[-1] if len(line.split()) >= 6 else ""
        if Path(path).name.startswith(library + ".so") and "r-xp" in line:
            return Path(path)
    return None


def run(*command: str) -> str:
    return subprocess.run(command, check=True, capture_output=True, text=True).stdout


@contextmanager
def probes(pid: int, tag: str) -> Iterator[list[str]]:
    """Entry and return uprobes on the decode and graph symbols in the files `pid` maps;
    the events to record. Removed on exit."""
    events = []
    try:
        for name, (library, symbol) in PROBES.items():
            path = mapped_library(pid, library)
            if path is None:
                raise RuntimeError(f"process {pid} maps no {library}")
            exported = run("nm", "-D", "--defined-only", str(path))
            if not re.search(rf"\s{symbol}$", exported, re.MULTILINE):
                continue  # an older build without llama_process
            for suffix, where in (("", symbol), ("_ret", f"{symbol}%return")):
                probe = f"{tag}_{name}{suffix}"
                run("perf", "probe", "-q", "-x", str(path), "-a", f"{GROUP}:{probe}={where}")
                events.append(f"{GROUP}:{probe}" + ("__return" if suffix else ""))
        yield events
    finally:
        subprocess.run(["perf", "probe", "-q", "-d", f"{GROUP}:{tag}_*"], check=False,
                       capture_output=True)


def measure(url: str, model: str, pid: int, tag: str, max_tokens: int,
            round_: int) -> tuple[dict[str, object], list[dict[str, object]]]:
    client = openai.OpenAI(base_url=url, api_key="bench", max_retries=0)
    stream(client, model, "Say hello.", 8)
    tids = {int(tid) for tid in os.listdir(f"/proc/{pid}/task")}
    output = f"/tmp/decode_split-{tag}.data"
    with probes(pid, tag) as events:
        command = ["perf", "record", "-q", "-a", "-o", output, "-e", "sched:sched_switch"]
        for event in events:
            command += ["-e", event]
        perf = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(1.0)  # perf is attached before the first request
        for index, prompt in enumerate(PROMPTS):
            stream(client, model, f"(split {round_}.{index}) {prompt}", max_tokens)
        perf.send_signal(signal.SIGINT)
        perf.wait(60)
    script = run("perf", "script", "-i", output, "-F", "tid,cpu,time,event,trace")
    os.unlink(output)
    parsed = parse(script)
    return split(parsed, tids), preemptions(parsed, tids)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--max-tokens", type=int, default=128)
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args()
    if os.geteuid() != 0:
        print("decode_split.py places uprobes: run it as root", file=sys.stderr)
        return 2
    gguf, binary = bundled_gguf(), llama_server()
    rows: dict[str, list[dict[str, object]]] = {"llama-server": [], "skulk": []}
    for round_ in range(args.rounds):
        order = list(rows) if round_ % 2 == 0 else list(reversed(rows))
        for name in order:
            if name == "skulk":
                with skulk_server(True, args.threads) as (url, model, pids):
                    row, taken = measure(url, model, pids["runner"], "skulk",
                                         args.max_tokens, round_)
            else:
                with llama_cpp_server(binary, gguf, args.threads) as (url, model, pids):
                    row, taken = measure(url, model, pids["server"], "server",
                                         args.max_tokens, round_)
            rows[name].append(row | {"preempted": taken[:8]})
            print(f"round {round_} {name}: " + ", ".join(
                f"{k} {v}" for k, v in row.items()), flush=True)
            for line in taken[:6]:
                print(f"    {line['thread']} preempted in the {line['in']} by {line['by']}: "
                      f"{line['times']} times, {line['total_ms']} ms, "
                      f"median {line['median_us']} µs")
    write_result("decode_split", {"rounds": args.rounds, "max_tokens": args.max_tokens,
                                  "threads": args.threads, "load_average": os.getloadavg(),
                                  "servers": rows})
    return 0


if __name__ == "__main__":
    sys.exit(main())
