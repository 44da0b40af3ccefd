"""Charts come from the results files; a benchmark without results is said to be missing."""

import json
from pathlib import Path
from typing import Any

import pytest

from skulk_site.charts import (
    CHARTS,
    charts_markdown,
    load_results,
    newest,
    provenance,
    render_charts,
)

REPOSITORY = Path(__file__).resolve().parents[2]
MACHINE = {"summary": "2-core test box"}


def write(directory: Path, name: str, benchmark: str, date: str,
          results: dict[str, Any]) -> None:
    (directory / name).write_text(json.dumps({
        "benchmark": benchmark, "date": date, "machine": MACHINE, "commit": "abcdef0123456",
        "source": "a test", "results": results}))


CHAT = {"skulk": {"ttft_ms": 100.0, "decode_tps": 80.0},
        "direct": {"ttft_ms": 70.0, "decode_tps": 82.0}}


def test_the_newest_run_holding_the_figures_is_charted(tmp_path: Path) -> None:
    write(tmp_path, "cluster-a.json", "cluster", "2026-01-01",
          {"master_failover_s": {"failover": 2.0, "cold_start": 4.0}})
    write(tmp_path, "cluster-b.json", "cluster", "2026-02-01",
          {"indexing_events_per_s": {"group": 1.0}})
    results = load_results(tmp_path)
    chosen = newest(results, "cluster", "master_failover_s")
    assert chosen is not None and chosen["date"] == "2026-01-01"
    assert newest(results, "cluster", "nothing") is None


def test_a_file_that_is_not_a_result_is_refused_with_its_name(tmp_path: Path) -> None:
    (tmp_path / "stray.json").write_text('{"benchmark": "x"}')
    with pytest.raises(ValueError, match="stray.json is not a benchmark result"):
        load_results(tmp_path)


def test_charts_are_svg_with_their_provenance_and_missing_ones_say_so(tmp_path: Path) -> None:
    write(tmp_path, "chat_latency-1.json", "chat_latency", "2026-03-04", CHAT)
    results = load_results(tmp_path)
    rendered = render_charts(results)
    by_slug = {item.chart.slug: item for item in rendered}
    image = by_slug["served-vs-direct"].image
    assert image is not None and image.lstrip().startswith(b"<?xml") and b"<svg" in image
    assert b"80" in image  # the decode figure is drawn as text on its bar
    assert by_slug["failover-gap"].image is None
    page = charts_markdown(rendered, "charts", results)
    assert "![Served vs direct decode](charts/served-vs-direct.svg)" in page
    assert "Measured on 2-core test box, 2026-03-04, commit `abcdef0123`." in page
    assert page.count('!!! note "Not measured yet"') == len(CHARTS) - 1


def test_the_same_results_draw_the_same_bytes(tmp_path: Path) -> None:
    write(tmp_path, "chat_latency-1.json", "chat_latency", "2026-03-04", CHAT)
    results = load_results(tmp_path)
    first, second = render_charts(results)[0].image, render_charts(results)[0].image
    assert first == second


def test_every_seeded_result_draws_its_chart() -> None:
    results = load_results(REPOSITORY / "bench" / "results")
    rendered = {item.chart.slug: item for item in render_charts(results)}
    drawn = {slug for slug, item in rendered.items() if item.image is not None}
    assert drawn == {chart.slug for chart in CHARTS}
    for item in rendered.values():
        if item.document is not None:
            assert "Measured on" in provenance(item.document)


def scale_row(nodes: int) -> dict[str, Any]:
    return {"nodes": nodes, "master_cpu_ms_per_event": 0.5, "formation_seconds": 1.0,
            "follower_cpu_ms_per_event_median": 0.2, "idle_bytes_per_node_second": 3000,
            "duplicates_per_event": 0.0, "failover_cpu_seconds_busiest_node": 0.01,
            "formation_cpu_seconds_busiest_node": 0.02}


def test_the_scale_curves_leave_out_a_size_that_did_not_finish(tmp_path: Path) -> None:
    write(tmp_path, "scale-1.json", "scale", "2026-11-28", {"rows": [
        scale_row(3), scale_row(30), {"nodes": 200, "error": "a phase did not finish"}]})
    rendered = {item.chart.slug: item for item in render_charts(load_results(tmp_path))}
    image = rendered["control-plane-scale"].image
    assert image is not None and b"CPU per indexed event" in image
    assert b">30<" in image and b">200<" not in image


def test_the_scale_curves_draw_the_burst_load_when_every_row_has_it(tmp_path: Path) -> None:
    rows = [{**scale_row(n), "burst": 10, "master_cpu_ms_per_event_bursts": 0.25}
            for n in (3, 30)]
    write(tmp_path, "scale-1.json", "scale", "2026-11-28", {"rows": rows})
    rendered = {item.chart.slug: item for item in render_charts(load_results(tmp_path))}
    image = rendered["control-plane-scale"].image
    assert image is not None and b"bursts of 10" in image


def test_the_scale_curves_draw_one_node_s_bursts_when_every_row_has_them(
        tmp_path: Path) -> None:
    rows = [{**scale_row(n), "burst": 10, "master_cpu_ms_per_event_bursts": 0.25,
             "master_cpu_ms_per_event_one_node_bursts": 0.12} for n in (3, 30)]
    write(tmp_path, "scale-1.json", "scale", "2026-11-28", {"rows": rows})
    rendered = {item.chart.slug: item for item in render_charts(load_results(tmp_path))}
    image = rendered["control-plane-scale"].image
    assert image is not None and b"one node's bursts of 10" in image
    assert b"bursts of 10" in image.replace(b"one node's bursts of 10", b"")
