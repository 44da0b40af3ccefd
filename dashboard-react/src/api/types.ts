// The payloads of the Skulk API routes the dashboard reads, as the node sends them.

export type HealthLevel = "ok" | "warn" | "error";

export interface HealthReason {
  code: string;
  level: HealthLevel;
  message: string;
  remedy: string;
}

export interface NodeHealth {
  level: HealthLevel;
  reasons: HealthReason[];
}

export interface WarmModel {
  model_id: string;
  instance_id: string;
  role: string;
  tokens_per_second: number | null;
}

export interface ReachableAddress {
  address: string;
  rtt_ms: number;
}

/** One GPU of a node as its driver reported it (`backend`: the API it was found through). */
export interface GpuDevice {
  name: string;
  backend: "cuda" | "metal" | "vulkan" | "rocm" | string;
  /** 0: not known. */
  vram_total_bytes: number;
  vram_free_bytes: number;
}

export interface NodeTelemetry {
  node_id: string;
  stamp: number;
  memory_total_bytes: number;
  memory_available_bytes: number;
  cpu_count: number;
  backends: string[];
  has_worker: boolean;
  api_url: string | null;
  /** The machine's host name (empty or absent from nodes that predate it). */
  hostname?: string;
  disk_total_bytes: number;
  disk_free_bytes: number;
  warm: WarmModel[];
  /** The node's GPUs (absent from nodes that predate them, empty on CPU-only nodes). */
  gpus?: GpuDevice[];
  /** `skulk models pull`s into this node's store under way, or stopped midway. */
  pulls?: StorePull[];
}

export interface StorePull {
  model_id: string;
  repo: string;
  done_bytes: number;
  total_bytes: number;
  /** Unix seconds of the pull's last progress. */
  updated_at: number;
}

export interface TopologyEdge {
  from_node: string;
  to_node: string;
  addresses: ReachableAddress[];
  observed_at?: number;
}

export interface Topology {
  nodes: { node_id: string; addresses: string[]; listen_ports: number[] }[];
  edges: TopologyEdge[];
}

export interface ShardAssignment {
  node_id: string;
  rank: number;
  world_size: number;
  start_layer: number;
  end_layer: number;
  ring_host: string | null;
}

export interface Instance {
  instance_id: string;
  model_id: string;
  engine: string;
  sharding: string;
  shards: Record<string, ShardAssignment>;
  context_token_limit: number;
  ring_port: number | null;
  // Not every node version stamps a drafter on its instances.
  drafter?: string | null;
}

export type RunnerKind =
  | "fetching" | "created" | "loading" | "loaded" | "warming_up" | "ready" | "running" | "failed"
  | "shutdown";

export interface RunnerStatus {
  kind: RunnerKind;
  error?: string;
}

export interface Task {
  kind: string;
  task_id: string;
  command_id: string;
  instance_id: string;
  owner_node: string;
  status: string;
  error: string | null;
  params: {
    model_id: string;
    max_tokens: number | null;
    messages: { role: string; content: string }[];
    speculative?: { drafter: string; max_draft: number | null } | null;
  };
}

export interface ClusterState {
  instances: Record<string, Instance>;
  runners: Record<string, RunnerStatus>;
  tasks: Record<string, Task>;
  last_event_applied_idx: number;
  telemetry: Record<string, NodeTelemetry>;
  topology: Topology;
  node_health: Record<string, NodeHealth>;
  node_id: string;
  session: string | null;
}

export interface ClusterNode {
  node_id: string;
  alive: boolean;
  api_url: string | null;
  hostname?: string | null;
  has_worker: boolean | null;
  backends: string[];
  memory_available_bytes: number | null;
  memory_total_bytes: number | null;
  gpus?: GpuDevice[];
  warm: WarmModel[];
  health: HealthLevel;
  health_reasons: HealthReason[];
  addresses: string[];
}

export interface ClusterSummary {
  node_id: string;
  master_node_id: string | null;
  /** "tls": members hold certificates from the cluster's CA; "insecure": started with --insecure. */
  security: "tls" | "insecure";
  session: string | null;
  nodes: ClusterNode[];
  instances: InstanceView[];
  tasks_in_flight: number;
}

/** running: an instance is placed; held: some node's disk holds the weights whole;
 * download: they must be fetched first (listed only with `?all=true`). */
export type ModelStatus = "running" | "held" | "download";

export interface ModelEntry {
  id: string;
  aliases: string[];
  context_length: number;
  available_formats: string[];
  running_instances: number;
  status: ModelStatus;
  /** Nodes whose disk holds the weights whole. */
  held_by: string[];
}

export interface ModelList {
  data: ModelEntry[];
}

export interface NodeFit {
  node_id: string;
  engine: string;
  fits: boolean;
  needed_bytes: number | null;
  usable_bytes: number;
  reason: string | null;
}

export interface ModelFits {
  model_id: string;
  size_bytes: number;
  sources: { format: string; size_bytes: number; on_this_node: boolean }[];
  fits: NodeFit[];
}

export interface PlacementFits {
  waiting_for: string[];
  models: ModelFits[];
}

export interface PreviewRank {
  node_id: string;
  rank: number;
  start_layer: number;
  end_layer: number;
  needed_bytes: number;
  usable_bytes: number;
  fits: boolean;
}

export interface PlacementPreview {
  engine: string;
  sharding: string;
  width: number;
  fits: boolean;
  reason: string | null;
  nodes: PreviewRank[];
  /** Predicted tokens/s of one stream; absent from nodes that predate predictions. */
  predicted_decode_tps?: number | null;
  /** What the prediction assumed for want of a measurement. */
  prediction_assumes?: string[];
  /** Whether a placement with the defaults would take this candidate now. */
  placed_by_default?: boolean;
}

export interface PlacementPreviews {
  model_id: string;
  waiting_for: string[];
  previews: PlacementPreview[];
}

export interface PlaceRequest {
  model_id: string;
  engine: string;
  sharding: string;
  min_nodes: number;
}

export interface InstanceRank {
  runner_id: string;
  node_id: string;
  rank: number;
  world_size: number;
  start_layer: number;
  end_layer: number;
  runner_status: string;
  // While the rank's weights are on their way to its node.
  fetch?: { done_bytes: number; total_bytes: number; source: string } | null;
}

export interface InstanceView {
  instance_id: string;
  model_id: string;
  engine: string;
  sharding: string;
  status: "pending" | "loading" | "ready" | "failed";
  context_token_limit: number;
  ranks: InstanceRank[];
}

export interface TraceSummary {
  trace_id: string;
  model: string;
  started_us: number;
  duration_ms: number;
  spans: number;
  finished: boolean;
  nodes: string[];
}

export interface ClusterTraces {
  nodes: Record<string, TraceSummary[]>;
}

export interface ChromeTraceEvent {
  name: string;
  ph: string;
  pid: number;
  tid: number;
  ts?: number;
  dur?: number;
  cat?: string;
  args?: Record<string, unknown>;
}

export interface ChromeTrace {
  traceEvents: ChromeTraceEvent[];
  otherData?: { trace_id?: string; model?: string };
}

export interface EventRecord {
  seq: number;
  index: number;
  session: string;
  master_node: string;
  kind: string;
  origin: string | null;
  applied_at: number;
  summary: string;
  detail: string;
}

export interface RecentEvents {
  node_id: string;
  last_seq: number;
  events: EventRecord[];
}
