// The node's history (`GET /v1/history`): the last hour of the cluster, each instance and
// each node, as columns of numbers a chart draws from, and markers from the event log.

import { request } from "./client";

export type MeasureField =
  | "decode_tokens_per_second"
  | "requests_per_second"
  | "ttft_p50_seconds"
  | "ttft_p95_seconds"
  | "queue_depth"
  | "admissions_refused_per_second"
  | "cpu_percent"
  | "memory_used_bytes"
  | "vram_used_bytes"
  | "runner_restarts"
  | "nodes_reporting";

/** `t`: Unix seconds, one a sample interval; each measure one value per `t` (null: nothing
 * to say, as a p95 with no request). */
export type Series = { t: number[] } & Partial<Record<MeasureField, (number | null)[]>>;

export type MarkerKind = "failover" | "eviction" | "placement" | "join" | "leave" | "master";

export interface HistoryMarker {
  at: number;
  kind: MarkerKind;
  text: string;
  node_id: string | null;
  instance_id: string | null;
}

export interface InstanceHistory {
  instance_id: string;
  model_id: string;
  series: Series;
}

export interface NodeLatest {
  node_id: string;
  /** The node's last sample, as a one-point series; null before its first. */
  latest: Series | null;
  /** Its runners' failures within the window. */
  runner_restarts: number;
}

export interface ClusterHistory {
  node_id: string;
  interval_seconds: number;
  window_seconds: number;
  /** The series hold only the time slots after this (0: all of the window). */
  since: number;
  cluster: Series;
  instances: InstanceHistory[];
  nodes: NodeLatest[];
  markers: HistoryMarker[];
  /** Nodes that did not answer, and why. */
  errors: Record<string, string>;
}

export interface NodeHistory {
  node_id: string;
  series: Series;
  markers: HistoryMarker[];
}

async function get<T>(path: string): Promise<T> {
  return (await (await request(path)).json()) as T;
}

export const historyApi = {
  cluster: (since = 0) => get<ClusterHistory>(`/v1/history${since > 0 ? `?since=${since}` : ""}`),
  node: (nodeId: string) => get<NodeHistory>(`/v1/history/nodes/${encodeURIComponent(nodeId)}`),
};
