import { describe, expect, it } from "vitest";
import type { ChromeTrace } from "../api/types";
import { traceList, waterfall } from "./traces";

const summary = (id: string, started: number) => ({
  trace_id: id, model: "m", started_us: started, duration_ms: 1, spans: 2, finished: true, nodes: [] });

describe("trace list", () => {
  it("gathers every node's traces, newest first, once each", () => {
    const list = traceList({ nodes: { a: [summary("t1", 10), summary("t2", 30)], b: [summary("t3", 20), summary("t1", 10)] } });
    expect(list.map((t) => t.trace_id)).toEqual(["t2", "t3", "t1"]);
    expect(list[1]!.heldBy).toBe("b");
  });
});

describe("waterfall", () => {
  const trace: ChromeTrace = {
    traceEvents: [
      { name: "process_name", ph: "M", pid: 1, tid: 0, args: { name: "node-a api" } },
      { name: "api.wait_first_chunk", ph: "X", pid: 1, tid: 0, ts: 1_000, dur: 500, args: { node_id: "node-a", rank: 0 } },
      { name: "process_name", ph: "M", pid: 2, tid: 0, args: { name: "node-b rank 1" } },
      { name: "runner.decode", ph: "X", pid: 2, tid: 0, ts: 1_600, dur: 400, args: { node_id: "node-b", rank: 1 } },
      { name: "runner.prefill", ph: "X", pid: 2, tid: 0, ts: 1_100, dur: 300, args: { node_id: "node-b", rank: 1 } },
    ],
  };

  it("puts each span in its process's lane, offset from the first span", () => {
    const chart = waterfall(trace);
    expect(chart.totalUs).toBe(1_000);
    expect(chart.lanes.map((l) => l.label)).toEqual(["node-a api", "node-b rank 1"]);
    const rank1 = chart.lanes[1]!.spans;
    expect(rank1.map((s) => [s.name, s.startUs, s.leftPct, s.widthPct])).toEqual([
      ["runner.prefill", 100, 10, 30], ["runner.decode", 600, 60, 40]]);
    expect(rank1[0]!.nodeId).toBe("node-b");
    expect(rank1[0]!.rank).toBe(1);
  });

  it("names a lane from the span's node and rank when metadata is missing, and is empty without spans", () => {
    const bare = waterfall({ traceEvents: trace.traceEvents.filter((e) => e.ph === "X").slice(1, 2) });
    expect(bare.lanes[0]!.label).toBe("node-b rank 1");
    expect(waterfall({ traceEvents: [] })).toEqual({ totalUs: 0, lanes: [] });
  });
});
