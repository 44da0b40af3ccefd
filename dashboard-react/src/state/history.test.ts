import { describe, expect, it } from "vitest";
import type { HistoryMarker, NodeLatest, Series } from "../api/history";
import { alignedColumns, formatSeconds, lastValue, markersWithin, nodesToShow, pointsDrawn } from "./history";

const series: Series = {
  t: [100, 105, 110],
  decode_tokens_per_second: [0, 12.5, null],
  ttft_p95_seconds: [null, 0.4, null],
};

function marker(at: number, overrides: Partial<HistoryMarker> = {}): HistoryMarker {
  return { at, kind: "failover", text: "runner run-1 failed", node_id: null, instance_id: null, ...overrides };
}

function node(id: string, tokens: number | null, restarts = 0, cpu = 10): NodeLatest {
  return { node_id: id, runner_restarts: restarts,
    latest: tokens === null ? null : { t: [100], decode_tokens_per_second: [tokens], cpu_percent: [cpu], queue_depth: [0] } };
}

describe("history charts' data", () => {
  it("aligns the chosen measures on the series' times, null where missing", () => {
    expect(alignedColumns(series, ["decode_tokens_per_second", "queue_depth"])).toEqual([
      [100, 105, 110], [0, 12.5, null], [null, null, null]]);
  });

  it("counts the samples a chart draws and reads the last value", () => {
    expect(pointsDrawn(series, ["decode_tokens_per_second"])).toBe(2);
    expect(pointsDrawn(series, ["ttft_p95_seconds"])).toBe(1);
    expect(pointsDrawn(series, ["queue_depth"])).toBe(0);
    expect(lastValue(series, "decode_tokens_per_second")).toBe(12.5);
    expect(lastValue(series, "queue_depth")).toBeNull();
    expect(lastValue(null, "cpu_percent")).toBeNull();
  });

  it("keeps the markers in range, and those about the chart's instance or node", () => {
    const markers = [marker(90), marker(104, { instance_id: "i-1" }), marker(106, { instance_id: "i-2" }),
      marker(107, { kind: "join", node_id: "b" }), marker(108, { kind: "master" })];
    expect(markersWithin(markers, 100, 110).map((m) => m.at)).toEqual([104, 106, 107, 108]);
    expect(markersWithin(markers, 100, 110, { instanceId: "i-1" }).map((m) => m.at)).toEqual([104, 108]);
    expect(markersWithin(markers, 100, 110, { nodeId: "b" }).map((m) => m.at)).toEqual([107, 108]);
  });

  it("lists the busiest nodes first, filtered, at most the limit", () => {
    const nodes = [node("a", 5), node("b", 50, 2, 90), node("c", null), node("ab", 20)];
    expect(nodesToShow(nodes, "tokens", "", 10).map((n) => n.node_id)).toEqual(["b", "ab", "a", "c"]);
    expect(nodesToShow(nodes, "tokens", "A", 10).map((n) => n.node_id)).toEqual(["ab", "a"]);
    expect(nodesToShow(nodes, "restarts", "", 1).map((n) => n.node_id)).toEqual(["b"]);
    expect(nodesToShow(nodes, "node", "", 10).map((n) => n.node_id)).toEqual(["a", "ab", "b", "c"]);
    const many = Array.from({ length: 200 }, (_, i) => node(`n${String(i).padStart(3, "0")}`, i));
    expect(nodesToShow(many, "tokens", "", 20).map((n) => n.node_id).slice(0, 2)).toEqual(["n199", "n198"]);
  });

  it("reads seconds as people do", () => {
    expect(formatSeconds(0.0425)).toBe("43 ms");
    expect(formatSeconds(2.5)).toBe("2.50 s");
    expect(formatSeconds(null)).toBe("–");
  });
});
