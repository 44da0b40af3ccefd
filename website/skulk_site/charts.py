"""The benchmark charts, drawn with matplotlib from bench/results/*.json at build time.

Each chart reads the newest results file of its benchmark that holds the figures it plots
(`date`, then file name, orders them) and says under it what machine, day and commit they
come from. A chart whose benchmark has no results yet renders no figure: the page says it
is not measured yet.
"""

import io
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.axes import Axes  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

Document = dict[str, Any]
COLOURS = ("#3f51b5", "#ff7043", "#26a69a", "#ab47bc", "#8d6e63", "#78909c")


def load_results(directory: Path) -> dict[str, list[Document]]:
    """Every results file by benchmark name, oldest first; a file that is not a results
    document raises with its path."""
    found: dict[str, list[tuple[str, str, Document]]] = {}
    for path in sorted(directory.glob("*.json")):
        document = json.loads(path.read_text())
        missing = {"benchmark", "date", "machine", "commit", "results"} - set(document)
        if missing:
            raise ValueError(f"{path} is not a benchmark result: no {', '.join(sorted(missing))}")
        found.setdefault(document["benchmark"], []).append(
            (str(document["date"]), path.name, document))
    return {name: [document for _, _, document in sorted(runs, key=lambda r: r[:2])]
            for name, runs in found.items()}


def newest(results: dict[str, list[Document]], benchmark: str, key: str) -> Document | None:
    """The newest run of `benchmark` whose results hold `key`."""
    runs = [doc for doc in results.get(benchmark, []) if key in doc["results"]]
    return runs[-1] if runs else None


def provenance(document: Document) -> str:
    machine = document["machine"]
    summary = machine.get("summary", "an undescribed machine")
    conditions = f" ({machine['conditions']})" if machine.get("conditions") else ""
    if not conditions and machine.get("load_average"):
        conditions = f" (load average {machine['load_average'][0]:g} at the end)"
    commit = str(document["commit"])[:10]
    return (f"Measured on {summary}{conditions}, {document['date']}, commit `{commit}`. "
            f"{document.get('source', '')}").strip()


def _figure(value: float) -> str:
    return f"{value:,.0f}" if value >= 1000 else f"{value:.3g}"


def _bars(axes: Axes, groups: list[str], series: dict[str, list[float]],
          errors: dict[str, list[tuple[float, float]]] | None = None) -> None:
    width = 0.8 / max(len(series), 1)
    for index, (label, values) in enumerate(series.items()):
        offsets = [g + (index - (len(series) - 1) / 2) * width for g in range(len(groups))]
        spread = None
        if errors and label in errors:
            spread = [[v - lo for v, (lo, _) in zip(values, errors[label], strict=True)],
                      [hi - v for v, (_, hi) in zip(values, errors[label], strict=True)]]
        bars = axes.bar(offsets, values, width, label=label, yerr=spread, capsize=2,
                        color=COLOURS[index % len(COLOURS)])
        axes.bar_label(bars, labels=[_figure(v) for v in values], fontsize=7, padding=2)
    highest = max([v for values in series.values() for v in values]
                  + [hi for spans in (errors or {}).values() for _, hi in spans])
    axes.set_ylim(0, highest * 1.35)  # room above the bars for the legend
    axes.set_xticks(range(len(groups)), groups)
    axes.spines[["top", "right"]].set_visible(False)


def served_vs_direct(results: Document) -> Figure:
    figure, (ttft, decode) = plt.subplots(1, 2, figsize=(8, 3.2))
    names = {"skulk": "Skulk over HTTP", "direct": "llama-cpp-python direct"}
    _bars(decode, [""], {names[k]: [results[k]["decode_tps"]] for k in names})
    decode.set_title("decode (tokens/s, higher is better)", fontsize=10)
    _bars(ttft, [""], {names[k]: [results[k]["ttft_ms"]] for k in names})
    ttft.set_title("time to first token (ms, lower is better)", fontsize=10)
    ttft.legend(fontsize=8, loc="upper left")
    return figure


def batching(results: Document) -> Figure:
    figure, axes = plt.subplots(figsize=(8, 3.4))
    by_label = results["concurrency"]
    counts = sorted({int(c) for series in by_label.values() for c in series})
    _bars(axes, [str(c) for c in counts], {
        label: [series[str(c)] for c in counts] for label, series in by_label.items()})
    axes.set_xlabel("concurrent requests")
    axes.set_ylabel("aggregate tokens/s")
    axes.legend(fontsize=8, loc="upper left")
    return figure


def llama_server(results: Document) -> Figure:
    figure, (ttft, rate) = plt.subplots(1, 2, figsize=(9, 3.4),
                                         gridspec_kw={"width_ratios": [1, 3]})
    names = {"skulk": "Skulk", "skulk-unbatched": "Skulk --no-batching",
             "llama-server": "llama-server"}
    figures = results["figures"]
    rows = {"decode_tps": "1 stream\n(decode)", "aggregate_4_tps": "4 streams",
            "aggregate_8_tps": "8 streams"}
    _bars(rate, list(rows.values()), {label: [figures[name][key] for key in rows]
                                      for name, label in names.items()})
    rate.set_title("tokens/s (higher is better)", fontsize=10)
    rate.legend(fontsize=8, loc="upper left")
    _bars(ttft, [""], {label: [figures[name]["ttft_ms"]] for name, label in names.items()})
    ttft.set_title("first token (ms, lower is better)", fontsize=10)
    return figure


def speculative(results: Document) -> Figure:
    rows = results["rows"]
    workloads = list(dict.fromkeys(row["workload"] for row in rows))
    configurations = [c for c in dict.fromkeys(row["configuration"] for row in rows)
                      if c != "plain"]
    cell = {(row["workload"], row["configuration"]): row for row in rows}
    figure, axes = plt.subplots(figsize=(9, 3.8))
    _bars(axes, workloads, {
        c: [cell[(w, c)]["vs_plain"] for w in workloads] for c in configurations}, {
        c: [tuple(cell[(w, c)].get("vs_plain_range") or (cell[(w, c)]["vs_plain"],) * 2)
            for w in workloads] for c in configurations})
    axes.axhline(1.0, color="black", linewidth=0.8, linestyle="--")
    axes.set_ylabel("decode speed vs plain (x)")
    axes.legend(fontsize=7, ncols=3, loc="upper left")
    return figure


def pipeline_mlx(results: Document) -> Figure:
    splits = results["splits"]
    figure, (decode, ttft) = plt.subplots(1, 2, figsize=(8, 3.2))
    labels = list(splits)
    _bars(decode, labels, {"decode tok/s": [splits[label]["decode_tps"] for label in labels]})
    decode.set_title("decode (tokens/s)", fontsize=10)
    _bars(ttft, labels, {"TTFT ms": [splits[label]["ttft_ms"] for label in labels]})
    ttft.set_title("time to first token (ms)", fontsize=10)
    for axes in (decode, ttft):
        axes.tick_params(axis="x", labelsize=7)
    return figure


def pipeline_llama(results: Document) -> Figure:
    configurations = results["configurations"]
    names = {"whole": "1 rank (whole)", "direct": "2 ranks, direct",
             "relayed": "2 ranks, TLS relays", "secured": "2 ranks, TLS in ggml RPC"}
    labels = [names.get(name, name) for name in configurations]
    figure, (decode, ttft) = plt.subplots(1, 2, figsize=(8, 3.2))
    _bars(decode, labels, {"decode tok/s": [c["decode_tps"] for c in configurations.values()]})
    decode.set_title("decode (tokens/s)", fontsize=10)
    _bars(ttft, labels, {"TTFT ms": [c["ttft_ms"] for c in configurations.values()]})
    ttft.set_title("time to first token (ms)", fontsize=10)
    for axes in (decode, ttft):
        axes.tick_params(axis="x", labelsize=7)
    return figure


def master_failover(results: Document) -> Figure:
    figures = results["master_failover_s"]
    figure, axes = plt.subplots(figsize=(6, 2.8))
    _bars(axes, ["seconds until a chat succeeds"], {
        "master killed: survivors serve again": [figures["failover"]],
        "cold start of one node": [figures["cold_start"]]})
    axes.legend(fontsize=8, loc="upper left")
    return figure


def _numbers(value: Any, prefix: str = "") -> Iterator[tuple[str, float]]:
    if isinstance(value, bool):
        return
    if isinstance(value, int | float):
        yield prefix or "value", float(value)
    elif isinstance(value, dict):
        for key, inner in value.items():
            yield from _numbers(inner, f"{prefix} {key}".strip())


def failover_gap(results: Document) -> Figure:
    """Whatever bench/failover.py records, in seconds: every number in `gap_s`."""
    figures = dict(_numbers(results["gap_s"]))
    figure, axes = plt.subplots(figsize=(7, 3))
    _bars(axes, list(figures), {"seconds": list(figures.values())})
    axes.set_ylabel("gap (s)")
    return figure


def control_plane_scale(results: Document) -> Figure:
    """bench/scale.py's rows against the number of nodes: CPU per event, duplicates and
    idle traffic, and the busiest node's CPU over formation and failover (the harness's
    wall times are every node's CPU on one core: bench/README.md has them)."""
    rows = [row for row in results["rows"] if "error" not in row]
    nodes = [row["nodes"] for row in rows]
    figure, (cpu, traffic, times) = plt.subplots(1, 3, figsize=(11, 3.2))
    per_event = {"master, events one at a time": "master_cpu_ms_per_event",
                 "follower (median)": "follower_cpu_ms_per_event_median"}
    if rows and all("master_cpu_ms_per_event_bursts" in row for row in rows):
        per_event[f"master, bursts of {rows[0]['burst']}"] = "master_cpu_ms_per_event_bursts"
    if rows and all("master_cpu_ms_per_event_one_node_bursts" in row for row in rows):
        per_event[f"master, one node's bursts of {rows[0]['burst']}"] = (
            "master_cpu_ms_per_event_one_node_bursts")
    for axes, series, label in (
            (cpu, per_event, "CPU per indexed event (ms)"),
            (traffic, {"idle kB/s per node": "idle_bytes_per_node_second",
                       "duplicates per event x 100": "duplicates_per_event"},
             "idle traffic, duplicates"),
            (times, {"formation": "formation_cpu_seconds_busiest_node",
                     "failover": "failover_cpu_seconds_busiest_node"},
             "busiest node's CPU over (s)")):
        for index, (name, key) in enumerate(series.items()):
            scale = {"idle_bytes_per_node_second": 1e-3, "duplicates_per_event": 100.0}
            values = [row[key] * scale.get(key, 1.0) for row in rows]
            axes.plot(nodes, values, marker="o", label=name, color=COLOURS[index])
        axes.set_xscale("log")
        axes.set_xticks(nodes, [str(n) for n in nodes])
        axes.set_xlabel("nodes")
        axes.set_title(label, fontsize=10)
        axes.set_ylim(bottom=0)
        axes.legend(fontsize=7)
        axes.spines[["top", "right"]].set_visible(False)
    return figure


@dataclass(frozen=True)
class Chart:
    slug: str
    title: str
    benchmark: str
    key: str  # the results field the chart plots
    draw: Callable[[Document], Figure]
    reading: str  # how to read it, one or two sentences


CHARTS = (
    Chart("served-vs-direct", "Served vs direct decode", "chat_latency", "skulk",
          served_vs_direct, "The whole stack over HTTP (control plane, runner process, data "
          "plane, SSE) beside llama-cpp-python called in one process, same prompts, greedy."),
    Chart("batching", "Batching throughput by concurrency", "mlx_sharding", "concurrency",
          batching, "Aggregate tokens/s of one MLX node serving 1, 4 and 8 concurrent "
          "requests with continuous batching and with `--no-batching`."),
    Chart("llama-server", "llama.cpp: Skulk against llama-server", "llama_server_compare",
          "figures", llama_server, "The bundled GGUF served by Skulk (4 sequences batched "
          "continuously, and one request at a time) and by llama.cpp's own llama-server "
          "(4 slots) built from the same llama.cpp, same client, greedy, one after the other."),
    Chart("speculative", "Speculative speedup by workload", "speculative", "rows",
          speculative, "Decode speed with each drafter relative to plain decoding in the same "
          "repeat (whiskers: the range over repeats). Greedy text was identical to plain."),
    Chart("pipeline-mlx", "Pipeline scaling by ranks: MLX", "mlx_sharding", "splits",
          pipeline_mlx, "One node beside 2- and 3-rank pipelines and a 3-rank tensor split, "
          "every rank a process on the same two cores: this measures oversubscription more "
          "than hops, not separate machines."),
    Chart("pipeline-llama", "Pipeline scaling by ranks: llama.cpp over RPC", "llama_rpc",
          "configurations", pipeline_llama, "A 2-rank layer split over ggml RPC (each rank on "
          "its own core and network namespace, 1 Gbit/s links) beside one process holding "
          "the whole model."),
    Chart("master-failover", "Master failover", "cluster", "master_failover_s",
          master_failover, "The master of three nodes killed with SIGKILL until a chat "
          "succeeds on both survivors, beside a cold start of one node until its first chat."),
    Chart("failover-gap", "Failover gap of a stream in flight", "failover", "gap_s",
          failover_gap, "How long a client's stream stalls when the node serving it dies "
          "(`bench/failover.py`)."),
    Chart("control-plane-scale", "The control plane from 3 to 200 nodes", "scale", "rows",
          control_plane_scale, "N whole nodes (API and worker off) on the in-memory bus in "
          "one process (`bench/scale.py`): each node's CPU per indexed event (events one "
          "at a time, and the master's in bursts proposed together by as many nodes and "
          "by one node), the idle "
          "traffic a node receives and the duplicates per event, and the CPU the busiest "
          "node spent over formation and over failover (what it pays on its own machine)."),
)


def svg(figure: Figure) -> bytes:
    """The figure as SVG with text kept as text and stable ids (same data, same bytes)."""
    figure.tight_layout()
    buffer = io.BytesIO()
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "skulk"}):
        figure.savefig(buffer, format="svg", metadata={"Date": None})
    plt.close(figure)
    return buffer.getvalue()


@dataclass(frozen=True)
class RenderedChart:
    chart: Chart
    document: Document | None
    image: bytes | None  # SVG; None when not measured yet


def render_charts(results: dict[str, list[Document]]) -> list[RenderedChart]:
    rendered = []
    for chart in CHARTS:
        document = newest(results, chart.benchmark, chart.key)
        image = None if document is None else svg(chart.draw(document["results"]))
        rendered.append(RenderedChart(chart, document, image))
    return rendered


def charts_markdown(rendered: list[RenderedChart], image_dir: str,
                    results: dict[str, list[Document]]) -> str:
    """One section per chart: the figure, how to read it and where it was measured."""
    lines: list[str] = []
    for item in rendered:
        chart = item.chart
        lines += [f"## {chart.title}", "", chart.reading, ""]
        if item.document is None:
            lines += ["!!! note \"Not measured yet\"",
                      f"    No results of `bench/{chart.benchmark}.py` with `{chart.key}` are "
                      "in `bench/results/` yet, so there is nothing to plot.", ""]
            continue
        runs = len(results.get(chart.benchmark, []))
        lines += [f"![{chart.title}]({image_dir}/{chart.slug}.svg)", "",
                  f"*{provenance(item.document)}*", ""]
        if runs > 1:
            lines += [f"{runs} runs of `{chart.benchmark}` are in `bench/results/`; the chart "
                      "shows the newest that has these figures.", ""]
    return "\n".join(lines)
