// What the charts draw, as plain data: which measures each chart shows and how to read
// them, columns aligned for uPlot, the markers in a chart's window, the node table's order.

import type { ClusterHistory, HistoryMarker, MarkerKind, MeasureField, NodeLatest, Series } from "../api/history";
import { formatBytes } from "./format";

// The node samples every 5 s; polling as often keeps the charts live.
export const HISTORY_POLL_MS = 5000;

export interface ChartLine {
  field: MeasureField;
  label: string;
}

export interface ChartSpec {
  id: string;
  title: string;
  lines: ChartLine[];
  format: (value: number | null | undefined) => string;
  /** A fixed value axis (CPU: 0-100 %); otherwise it follows the data. */
  range?: [number, number];
  /** Counts: ticks only at whole numbers. */
  whole?: boolean;
}

function number(unit: string, digits = 1) {
  return (value: number | null | undefined) =>
    value === null || value === undefined || !Number.isFinite(value) ? "–" : `${value.toFixed(value >= 100 ? 0 : digits)}${unit}`;
}

export function formatSeconds(value: number | null | undefined): string {
  if (value === null || value === undefined || !Number.isFinite(value)) return "–";
  return value < 1 ? `${(value * 1000).toFixed(0)} ms` : `${value.toFixed(2)} s`;
}

const bytes = (value: number | null | undefined) => formatBytes(value);

/** The charts of the whole cluster (and of one node, drilled into), in reading order. */
export const CLUSTER_CHARTS: ChartSpec[] = [
  { id: "tokens", title: "Decode tokens/s", lines: [{ field: "decode_tokens_per_second", label: "tokens/s" }], format: number(" tok/s") },
  { id: "requests", title: "Requests/s", lines: [
    { field: "requests_per_second", label: "started/s" },
    { field: "admissions_refused_per_second", label: "refused/s" }], format: number("/s", 2) },
  { id: "ttft", title: "Time to first token", lines: [
    { field: "ttft_p50_seconds", label: "p50" }, { field: "ttft_p95_seconds", label: "p95" }], format: formatSeconds },
  { id: "queue", title: "Queue depth", lines: [{ field: "queue_depth", label: "open streams" }], format: number("", 0), whole: true },
  { id: "cpu", title: "CPU", lines: [{ field: "cpu_percent", label: "busy" }], format: number("%", 0), range: [0, 100] },
  { id: "memory", title: "Memory and VRAM in use", lines: [
    { field: "memory_used_bytes", label: "memory" }, { field: "vram_used_bytes", label: "VRAM" }], format: bytes },
  { id: "restarts", title: "Runner restarts", lines: [{ field: "runner_restarts", label: "restarts" }], format: number("", 0), whole: true },
];

/** The charts of one instance: what every node took for it, and its queue. */
export const INSTANCE_CHARTS: ChartSpec[] = [
  { id: "tokens", title: "Decode tokens/s", lines: [{ field: "decode_tokens_per_second", label: "tokens/s" }], format: number(" tok/s") },
  { id: "ttft", title: "Time to first token", lines: [
    { field: "ttft_p50_seconds", label: "p50" }, { field: "ttft_p95_seconds", label: "p95" }], format: formatSeconds },
  { id: "queue", title: "Queue (running and queued)", lines: [
    { field: "queue_depth", label: "unfinished" }, { field: "requests_per_second", label: "started/s" }], format: number("", 1) },
];

export type AlignedColumns = [number[], ...(number | null)[][]];

/** The series' times and the chosen measures, as uPlot's columns (missing: all null). */
export function alignedColumns(series: Series, fields: MeasureField[]): AlignedColumns {
  const times = series.t;
  return [times, ...fields.map((field) => {
    const values = series[field];
    return times.map((_, i) => values?.[i] ?? null);
  })];
}

/** How many of the series' samples have a value for any of `fields`. */
export function pointsDrawn(series: Series, fields: MeasureField[]): number {
  return series.t.filter((_, i) => fields.some((f) => {
    const v = series[f]?.[i];
    return v !== null && v !== undefined;
  })).length;
}

export function lastValue(series: Series | null, field: MeasureField): number | null {
  const values = series?.[field];
  if (!values) return null;
  for (let i = values.length - 1; i >= 0; i -= 1) {
    const v = values[i];
    if (v !== null && v !== undefined) return v;
  }
  return null;
}

/** The markers a chart over [from, to] shows: those in range, of the instance or node it
 * is about when it is about one (markers about no one belong on every chart). */
export function markersWithin(markers: HistoryMarker[], from: number, to: number,
  about?: { instanceId?: string; nodeId?: string }): HistoryMarker[] {
  return markers.filter((m) => m.at >= from && m.at <= to && (
    !about ||
    (about.instanceId !== undefined && (m.instance_id === about.instanceId || (!m.instance_id && !m.node_id))) ||
    (about.nodeId !== undefined && (m.node_id === about.nodeId || (!m.instance_id && !m.node_id)))));
}

export const MARKER_TITLES: Record<MarkerKind, string> = {
  failover: "Failover",
  eviction: "Eviction",
  placement: "Placement",
  join: "Node joined",
  leave: "Node left",
  master: "New master",
};

export type NodeOrder = "node" | "tokens" | "queue" | "cpu" | "restarts";

export const NODE_ORDERS: Record<NodeOrder, string> = {
  node: "name",
  tokens: "tokens/s",
  queue: "queue",
  cpu: "CPU",
  restarts: "restarts",
};

function orderValue(node: NodeLatest, order: NodeOrder): number {
  switch (order) {
    case "tokens": return lastValue(node.latest, "decode_tokens_per_second") ?? -1;
    case "queue": return lastValue(node.latest, "queue_depth") ?? -1;
    case "cpu": return lastValue(node.latest, "cpu_percent") ?? -1;
    case "restarts": return node.runner_restarts;
    case "node": return 0;
  }
}

/** The nodes matching `filter` (by id), busiest first by `order` (by name for "node"),
 * at most `limit`: on a large cluster the table shows the ones worth a look first. */
export function nodesToShow(nodes: NodeLatest[], order: NodeOrder, filter: string, limit: number): NodeLatest[] {
  const wanted = filter.trim().toLowerCase();
  const matching = nodes.filter((n) => !wanted || n.node_id.toLowerCase().includes(wanted));
  const sorted = [...matching].sort((a, b) => order === "node"
    ? a.node_id.localeCompare(b.node_id)
    : orderValue(b, order) - orderValue(a, order) || a.node_id.localeCompare(b.node_id));
  return sorted.slice(0, limit);
}

// A poll asks again for the last few slots: a node's sample may reach the answering node
// a moment after the others', so the newest slots can still grow.
const SLOTS_ASKED_AGAIN = 3;

/** What to ask `/v1/history` for next: slots after this (0: everything). */
export function nextSince(held: ClusterHistory | null): number {
  const last = held?.cluster.t.at(-1);
  return held && last !== undefined ? last - SLOTS_ASKED_AGAIN * held.interval_seconds : 0;
}

/** `held` with `fresh`'s slots in place of its own from `fresh`'s first on, and those older
 * than `windowSeconds` before the newest dropped. */
export function mergeSeries(held: Series | undefined, fresh: Series | undefined, windowSeconds: number): Series {
  const old = held ?? { t: [] };
  const add = fresh ?? { t: [] };
  const from = add.t[0] ?? Infinity;
  const kept = old.t.filter((t) => t < from).length;
  const times = [...old.t.slice(0, kept), ...add.t];
  const newest = times.at(-1) ?? 0;
  const start = times.findIndex((t) => t >= newest - windowSeconds);
  const merged: Series = { t: times.slice(start) };
  const fields = new Set([...Object.keys(old), ...Object.keys(add)].filter((k) => k !== "t")) as Set<MeasureField>;
  for (const field of fields) {
    const column = [...(old[field] ?? old.t.map(() => null)).slice(0, kept), ...(add[field] ?? add.t.map(() => null))];
    merged[field] = column.slice(start);
  }
  return merged;
}

/** The history held after a poll: all of `fresh` when it was a whole answer, else `held`'s
 * series extended by it; nodes, markers and errors are always `fresh`'s. */
export function mergeHistory(held: ClusterHistory | null, fresh: ClusterHistory): ClusterHistory {
  if (!held || fresh.since <= 0) return fresh;
  const window = fresh.window_seconds;
  const instances = new Map(held.instances.map((i) => [i.instance_id, i]));
  for (const instance of fresh.instances) {
    instances.set(instance.instance_id, { ...instance,
      series: mergeSeries(instances.get(instance.instance_id)?.series, instance.series, window) });
  }
  const newest = fresh.cluster.t.at(-1) ?? held.cluster.t.at(-1) ?? 0;
  return {
    ...fresh,
    cluster: mergeSeries(held.cluster, fresh.cluster, window),
    // An instance with no new slot keeps its old ones until they leave the window.
    instances: [...instances.values()]
      .map((i) => ({ ...i, series: mergeSeries(i.series, undefined, window) }))
      .filter((i) => (i.series.t.at(-1) ?? 0) >= newest - window)
      .sort((a, b) => a.instance_id.localeCompare(b.instance_id)),
  };
}
