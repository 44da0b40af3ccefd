// Traces: the list across nodes, and one trace as a waterfall with a lane per node's API
// and per (node, rank).

import type { ChromeTrace, ClusterTraces, TraceSummary } from "../api/types";

export interface TraceListEntry extends TraceSummary {
  heldBy: string;
}

/** Every node's traces, newest first. */
export function traceList(traces: ClusterTraces): TraceListEntry[] {
  const entries = Object.entries(traces.nodes).flatMap(([heldBy, list]) =>
    (Array.isArray(list) ? list : []).map((t) => ({ ...t, heldBy })));
  const unique = new Map(entries.map((e) => [e.trace_id, e]));
  return [...unique.values()].sort((a, b) => b.started_us - a.started_us);
}

export interface WaterfallSpan {
  name: string;
  startUs: number; // from the trace's first span
  durationUs: number;
  leftPct: number;
  widthPct: number;
  nodeId: string | null;
  rank: number | null;
}

export interface WaterfallLane {
  label: string;
  spans: WaterfallSpan[];
}

export interface Waterfall {
  totalUs: number;
  lanes: WaterfallLane[];
}

function stringArg(args: Record<string, unknown> | undefined, key: string): string | null {
  const value = args?.[key];
  return typeof value === "string" ? value : null;
}

function numberArg(args: Record<string, unknown> | undefined, key: string): number | null {
  const value = args?.[key];
  return typeof value === "number" ? value : null;
}

export function waterfall(trace: ChromeTrace): Waterfall {
  const laneNames = new Map<number, string>();
  for (const event of trace.traceEvents) {
    if (event.ph === "M" && event.name === "process_name") {
      const name = stringArg(event.args, "name");
      if (name) laneNames.set(event.pid, name);
    }
  }
  const complete = trace.traceEvents.filter((e) => e.ph === "X" && e.ts !== undefined);
  if (complete.length === 0) return { totalUs: 0, lanes: [] };
  const start = Math.min(...complete.map((e) => e.ts!));
  const end = Math.max(...complete.map((e) => e.ts! + (e.dur ?? 0)));
  const totalUs = Math.max(end - start, 1);
  const lanes = new Map<string, WaterfallSpan[]>();
  for (const event of [...complete].sort((a, b) => a.ts! - b.ts!)) {
    const nodeId = stringArg(event.args, "node_id");
    const rank = numberArg(event.args, "rank");
    const label = laneNames.get(event.pid) ?? `${nodeId ?? "?"} rank ${rank ?? "?"}`;
    const startUs = event.ts! - start;
    const durationUs = event.dur ?? 0;
    const span = {
      name: event.name, startUs, durationUs, nodeId, rank,
      leftPct: (startUs / totalUs) * 100,
      widthPct: Math.max((durationUs / totalUs) * 100, 0.3),
    };
    lanes.set(label, [...(lanes.get(label) ?? []), span]);
  }
  return { totalUs, lanes: [...lanes.entries()].map(([label, spans]) => ({ label, spans })) };
}
