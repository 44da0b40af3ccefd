// The cluster as a graph: nodes on a circle with their memory, disk, backends and health;
// links from the topology's observed edges, one per pair of nodes.

import type { ClusterState, ClusterSummary, GpuDevice, HealthLevel, HealthReason } from "../api/types";

export interface Usage {
  used: number;
  total: number;
  fraction: number;
}

/** One GPU as a node card shows it; `memory` is null when the driver gave no sizes. */
export interface GpuView {
  name: string;
  backend: string;
  memory: Usage | null;
}

export interface GraphNode {
  id: string;
  x: number;
  y: number;
  isMaster: boolean;
  isSelf: boolean;
  alive: boolean;
  hasWorker: boolean | null;
  health: HealthLevel;
  reasons: HealthReason[];
  memory: Usage | null;
  disk: Usage | null;
  backends: string[];
  /** Null when the node has not said (no readings yet, or it predates GPU readings). */
  gpus: GpuView[] | null;
  warm: string[];
  apiUrl: string | null;
  /** The machine's host name, shown beside the id; null when the node did not say. */
  hostname: string | null;
}

export interface GraphLink {
  a: string;
  b: string;
  // Whether each side reached the other (false: only one side's probe answered).
  bothWays: boolean;
  rttMs: number | null;
}

export interface ClusterGraph {
  nodes: GraphNode[];
  links: GraphLink[];
  masterId: string | null;
  selfId: string;
}

export function usage(total: number | null | undefined, free: number | null | undefined): Usage | null {
  if (!total || total <= 0 || free === null || free === undefined) return null;
  const used = Math.max(total - free, 0);
  return { used, total, fraction: Math.min(used / total, 1) };
}

export function gpuViews(gpus: GpuDevice[] | undefined): GpuView[] | null {
  if (gpus === undefined) return null;
  return gpus.map((gpu) => ({
    name: gpu.name, backend: gpu.backend, memory: usage(gpu.vram_total_bytes, gpu.vram_free_bytes),
  }));
}

/** Positions on a circle of radius 0.35 around (0.5, 0.5); one node sits in the middle. */
export function circleLayout(count: number): { x: number; y: number }[] {
  if (count === 1) return [{ x: 0.5, y: 0.5 }];
  return Array.from({ length: count }, (_, i) => {
    const angle = -Math.PI / 2 + (2 * Math.PI * i) / count;
    return { x: 0.5 + 0.35 * Math.cos(angle), y: 0.5 + 0.35 * Math.sin(angle) };
  });
}

export function buildLinks(state: ClusterState, known: Set<string>): GraphLink[] {
  const byPair = new Map<string, GraphLink & { directions: Set<string> }>();
  for (const edge of state.topology.edges) {
    if (!known.has(edge.from_node) || !known.has(edge.to_node) || edge.from_node === edge.to_node) {
      continue;
    }
    const [a, b] = [edge.from_node, edge.to_node].sort() as [string, string];
    const key = `${a}|${b}`;
    const link = byPair.get(key) ?? { a, b, bothWays: false, rttMs: null, directions: new Set() };
    link.directions.add(edge.from_node);
    const rtt = edge.addresses[0]?.rtt_ms;
    if (rtt !== undefined && (link.rttMs === null || rtt < link.rttMs)) link.rttMs = rtt;
    byPair.set(key, link);
  }
  return [...byPair.values()]
    .map(({ a, b, rttMs, directions }) => ({ a, b, rttMs, bothWays: directions.size === 2 }))
    .sort((x, y) => `${x.a}|${x.b}`.localeCompare(`${y.a}|${y.b}`));
}

export function buildClusterGraph(cluster: ClusterSummary, state: ClusterState): ClusterGraph {
  const ids = [...new Set([...cluster.nodes.map((n) => n.node_id), ...Object.keys(state.telemetry)])].sort();
  const summaries = new Map(cluster.nodes.map((n) => [n.node_id, n]));
  const places = circleLayout(ids.length);
  const nodes = ids.map((id, i): GraphNode => {
    const summary = summaries.get(id);
    const reading = state.telemetry[id];
    const health = state.node_health[id];
    return {
      id,
      ...places[i]!,
      isMaster: id === cluster.master_node_id,
      isSelf: id === cluster.node_id,
      alive: summary?.alive ?? false,
      hasWorker: reading?.has_worker ?? summary?.has_worker ?? null,
      health: health?.level ?? summary?.health ?? "ok",
      reasons: health?.reasons ?? summary?.health_reasons ?? [],
      memory: usage(reading?.memory_total_bytes ?? summary?.memory_total_bytes,
        reading?.memory_available_bytes ?? summary?.memory_available_bytes),
      disk: usage(reading?.disk_total_bytes, reading?.disk_free_bytes),
      backends: reading?.backends ?? summary?.backends ?? [],
      gpus: gpuViews(reading?.gpus ?? summary?.gpus),
      warm: (reading?.warm ?? summary?.warm ?? []).map((w) => `${w.model_id} (${w.role})`),
      apiUrl: reading?.api_url ?? summary?.api_url ?? null,
      hostname: reading?.hostname || summary?.hostname || null,
    };
  });
  return { nodes, links: buildLinks(state, new Set(ids)), masterId: cluster.master_node_id, selfId: cluster.node_id };
}

/** What a health badge says on hover: each problem and what to do about it. */
export function healthText(level: HealthLevel, reasons: HealthReason[]): string {
  if (reasons.length === 0) return level === "ok" ? "Healthy: nothing to fix." : `Health: ${level}`;
  return reasons.map((r) => `${r.message}. Fix: ${r.remedy}.`).join("\n");
}
