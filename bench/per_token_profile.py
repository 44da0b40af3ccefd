"""Where one stream's tokens cost CPU: a node serving the bundled GGUF on llama.cpp,
streamed through the OpenAI dialect one request at a time, each process's threads read
from /proc/<pid>/task/<tid>/schedstat before and after.

    .venv/bin/python bench/per_token_profile.py [--requests 6] [--max-tokens 128]
                                                [--threads N] [--py-spy PATH] [--native]
                                                [--echo-step-ms MS]
    PYTHONPATH=OTHER/src .venv/bin/python bench/per_token_profile.py --label OTHER
                                                # another checkout's node, same minute

Reports, per generated token: CPU time of each thread of the node and of the runner
(grouped by thread name), the time each waited for a core (run-queue delay: a compute
thread waiting here stalls the whole step), and the scheduler slices (wakes). With
`--py-spy PATH` (py-spy's binary, e.g. from `pip install --target DIR py-spy`) it also
records both processes, one after the other, and writes their collapsed stacks beside the
JSON result in bench/results/ (the profiler itself inflates what it samples).
"""

import argparse
import json
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.results import RESULTS_DIR, write_result  # noqa: E402
from tests.node_process import NodeProcess  # noqa: E402

PROMPT = "Write a short story about a fox in the snow."


@dataclass(frozen=True)
class ThreadTimes:
    name: str
    run_ns: int
    wait_ns: int
    slices: int
    voluntary: int  # context switches: the thread went to sleep (a wait, a read)
    preempted: int  # ... it was taken off its core


def threads_of(pid: int) -> dict[int, ThreadTimes]:
    """Every thread of `pid`: its name (`main` for the process's first thread), CPU time,
    run-queue wait and slices so far."""
    found: dict[int, ThreadTimes] = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            name = "main" if int(task.name) == pid else (task / "comm").read_text().strip()
            run, wait, slices = (int(v) for v in (task / "schedstat").read_text().split())
            switches = {key: int(value) for key, _, value in (
                line.partition(":\t") for line in (task / "status").read_text().splitlines())
                if key.endswith("ctxt_switches")}
        except (FileNotFoundError, ProcessLookupError, ValueError):
            continue  # the thread ended between the listing and the read
        found[int(task.name)] = ThreadTimes(name, run, wait, slices,
                                            switches["voluntary_ctxt_switches"],
                                            switches["nonvoluntary_ctxt_switches"])
    return found


def per_token(before: dict[int, ThreadTimes], after: dict[int, ThreadTimes],
              tokens: int) -> dict[str, dict[str, float]]:
    """CPU ms, wait ms and slices per token, summed over the threads of one name."""
    grouped: dict[str, dict[str, float]] = {}
    for tid, now in after.items():
        then = before.get(tid, ThreadTimes(now.name, 0, 0, 0, 0, 0))
        row = grouped.setdefault(now.name, {"cpu_ms": 0.0, "wait_ms": 0.0, "slices": 0.0,
                                            "sleeps": 0.0, "preempted": 0.0, "threads": 0})
        row["cpu_ms"] += (now.run_ns - then.run_ns) / 1e6 / tokens
        row["wait_ms"] += (now.wait_ns - then.wait_ns) / 1e6 / tokens
        row["slices"] += (now.slices - then.slices) / tokens
        row["sleeps"] += (now.voluntary - then.voluntary) / tokens
        row["preempted"] += (now.preempted - then.preempted) / tokens
        row["threads"] += 1
    return {name: {k: round(v, 4) for k, v in row.items()}
            for name, row in sorted(grouped.items(), key=lambda kv: -kv[1]["cpu_ms"])
            if row["cpu_ms"] > 0.0005}


def stream_once(url: str, index: int, max_tokens: int, echo: bool) -> tuple[int, float]:
    """One streamed chat completion; its completion tokens and decode seconds. For the
    echo engine (which answers with the prompt's words) the prompt has enough of them."""
    words = " ".join([PROMPT] * (max_tokens // len(PROMPT.split()) + 1)) if echo else PROMPT
    body = {"model": "smollm2-135m", "stream": True, "max_tokens": max_tokens,
            "temperature": 0, "stream_options": {"include_usage": True},
            "messages": [{"role": "user", "content": f"({index}) {words}"}]}
    first = last = None
    tokens = 0
    with httpx.stream("POST", f"{url}/v1/chat/completions", json=body, timeout=120) as reply:
        for line in reply.iter_lines():
            if not line.startswith("data: {"):
                continue
            event = json.loads(line[6:])
            if event.get("usage"):
                tokens = event["usage"]["completion_tokens"]
            if event.get("choices") and event["choices"][0]["delta"].get("content"):
                last = time.perf_counter()
                first = first or last
    assert first is not None and last is not None and tokens, "no tokens came back"
    return tokens, last - first


def total(rows: dict[str, dict[str, float]], key: str) -> float:
    return round(sum(row[key] for row in rows.values()), 4)


def cpu_ns(pid: int) -> int:
    return sum(times.run_ns for times in threads_of(pid).values())


def measure(node: NodeProcess, runner: int, requests: int, max_tokens: int,
            idle_seconds: float, echo: bool) -> dict[str, object]:
    """Per token, each process's threads; and the node's CPU per token less what it
    spends idle (heartbeats, telemetry: measured for `idle_seconds` first, scaled to the
    streaming's duration)."""
    assert node.process is not None
    pids = {"node": node.process.pid, "runner": runner}
    idle_from, idle_started = cpu_ns(node.process.pid), time.perf_counter()
    time.sleep(idle_seconds)
    idle_ms_per_s = (cpu_ns(node.process.pid) - idle_from) / 1e6 / (
        time.perf_counter() - idle_started)
    before = {name: threads_of(pid) for name, pid in pids.items()}
    started = time.perf_counter()
    tokens, decode = 0, 0.0
    for index in range(requests):
        count, seconds = stream_once(node.url, index, max_tokens, echo)
        tokens, decode = tokens + count, decode + seconds
    elapsed = time.perf_counter() - started
    after = {name: threads_of(pid) for name, pid in pids.items()}
    breakdown = {name: per_token(before[name], after[name], tokens) for name in pids}
    keys = ("cpu_ms", "wait_ms", "slices", "sleeps", "preempted")
    totals = {name: {key: total(rows, key) for key in keys} for name, rows in breakdown.items()}
    return {"tokens": tokens, "decode_tps": round(tokens / decode, 2),
            "node_idle_cpu_ms_per_s": round(idle_ms_per_s, 3),
            "node_cpu_ms_per_token_less_idle": round(
                totals["node"]["cpu_ms"] - idle_ms_per_s * elapsed / tokens, 4),
            "per_token": breakdown, "totals": totals}


def record(py_spy: str, pid: int, seconds: int, out: Path,
           native: bool) -> subprocess.Popen[bytes]:
    return subprocess.Popen([py_spy, "record", "--pid", str(pid), "--duration", str(seconds),
                             "--rate", "250", "--format", "raw", "--output", str(out),
                             *(["--native"] if native else ["--nonblocking"])],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=6)
    parser.add_argument("--max-tokens", type=int, default=128)
    parser.add_argument("--threads", type=int, default=None,
                        help="the runner's compute threads (default: the node's own)")
    parser.add_argument("--idle-seconds", type=float, default=5.0,
                        help="how long the node's idle CPU is measured first")
    parser.add_argument("--py-spy", default=None, help="py-spy's binary: also profile")
    parser.add_argument("--echo-step-ms", type=float, default=None,
                        help="the echo engine instead of llama.cpp, a step every MS: the "
                             "node's per-token path alone, steady on a busy machine")
    parser.add_argument("--cprofile", type=Path, default=None,
                        help="with --echo-step-ms: the node's cProfile statistics, written "
                             "here when it stops (pstats; the profiler slows what it sees)")
    parser.add_argument("--label", default="",
                        help="what ran, for the JSON (e.g. a baseline checkout's commit)")
    parser.add_argument("--native", action="store_true",
                        help="py-spy samples the node's native frames too")
    args = parser.parse_args()
    flags = ["--serve", "smollm2-135m", "-q"]
    flags += [] if args.threads is None else ["--threads", str(args.threads)]
    program: tuple[str, ...] = ("-m", "skulk.cli.main", "run")
    if args.echo_step_ms is not None:
        program = (str(Path(__file__).resolve().parent / "echo_node.py"),)
        flags += ["--echo-step-ms", str(args.echo_step_ms)]
        flags += [] if args.cprofile is None else ["--profile", str(args.cprofile)]
    stamp = time.strftime("%Y-%m-%dT%H%M%SZ", time.gmtime())
    with tempfile.TemporaryDirectory() as data_dir:
        node = NodeProcess(Path(data_dir), *flags, program=program).start()
        try:
            node.wait_model_ready(timeout=300)
            runner = node.newest_runner_pid()
            echo = args.echo_step_ms is not None
            stream_once(node.url, -1, 16, echo)  # warm up
            result = measure(node, runner, args.requests, args.max_tokens, args.idle_seconds,
                             echo)
            for name, rows in result["per_token"].items():  # type: ignore[attr-defined]
                print(f"{name}: " + json.dumps(result["totals"][name]))  # type: ignore[index]
                for thread, row in rows.items():
                    print(f"  {thread:>18}: {json.dumps(row)}")
            print(f"decode {result['decode_tps']} tok/s over {result['tokens']} tokens; node "
                  f"idle {result['node_idle_cpu_ms_per_s']} ms/s, per token less idle "
                  f"{result['node_cpu_ms_per_token_less_idle']} ms")
            if args.py_spy:
                assert node.process is not None
                for name, pid in (("node", node.process.pid), ("runner", runner)):
                    out = RESULTS_DIR / f"per_token_profile_{name}-{stamp}.txt"
                    spy = record(args.py_spy, pid, 12, out, args.native and name == "node")
                    measure(node, runner, args.requests, args.max_tokens, 0.0, echo)
                    spy.wait(60)
                    print(f"py-spy {name}: {out}")
        finally:
            node.stop()
    write_result("per_token_profile", {"label": args.label, "echo_step_ms": args.echo_step_ms,
                                       "requests": args.requests,
                                       "max_tokens": args.max_tokens,
                                       "threads": args.threads, **result})
    return 0


if __name__ == "__main__":
    sys.exit(main())
