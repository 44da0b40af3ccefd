import { describe, expect, it } from "vitest";
import type { ClusterHistory, HistoryMarker, NodeLatest, Series } from "../api/history";
import {
  alignedColumns, formatSeconds, lastValue, markersWithin, mergeHistory, mergeSeries, nextSince, nodesToShow, pointsDrawn,
} from "./history";

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

function answer(since: number, cluster: Series, instances: ClusterHistory["instances"] = []): ClusterHistory {
  return { node_id: "a", interval_seconds: 5, window_seconds: 20, since, cluster, instances, nodes: [], markers: [], errors: {} };
}

describe("polling for newer slots", () => {
  it("asks again for the last three slots held, everything at first", () => {
    expect(nextSince(null)).toBe(0);
    expect(nextSince(answer(0, { t: [100, 105, 110, 115] }))).toBe(100);
  });

  it("replaces the slots asked again, appends the new and drops those past the window", () => {
    const held = { t: [100, 105, 110, 115], cpu_percent: [1, 2, 3, 4] };
    const fresh = { t: [110, 115, 120], cpu_percent: [30, 40, 50], queue_depth: [7, 8, 9] };
    expect(mergeSeries(held, fresh, 20)).toEqual({
      t: [100, 105, 110, 115, 120], cpu_percent: [1, 2, 30, 40, 50], queue_depth: [null, null, 7, 8, 9] });
    expect(mergeSeries(held, fresh, 10).t).toEqual([110, 115, 120]);
    expect(mergeSeries(held, { t: [] }, 20)).toEqual(held);
  });

  it("takes a whole answer as it is, and extends instances, keeping a quiet one for its window", () => {
    const first = answer(0, { t: [100, 105] }, [
      { instance_id: "i-1", model_id: "m", series: { t: [100, 105], queue_depth: [1, 2] } },
      { instance_id: "i-2", model_id: "m", series: { t: [100], queue_depth: [5] } }]);
    expect(mergeHistory(null, first)).toBe(first);
    const later = answer(100, { t: [105, 110, 115, 120, 125] }, [
      { instance_id: "i-1", model_id: "m", series: { t: [105, 110], queue_depth: [3, 4] } }]);
    const merged = mergeHistory(first, later);
    expect(merged.cluster.t).toEqual([105, 110, 115, 120, 125]);
    expect(merged.instances.map((i) => i.instance_id)).toEqual(["i-1"]);
    expect(merged.instances[0]!.series).toEqual({ t: [100, 105, 110], queue_depth: [1, 3, 4] });
  });
});
