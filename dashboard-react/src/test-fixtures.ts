// Builders of API payloads for unit tests only (the app never imports this file).

import type {
  ClusterState,
  ClusterSummary,
  InstanceView,
  NodeTelemetry,
  PlacementFits,
  Task,
} from "./api/types";

export function telemetry(id: string, overrides: Partial<NodeTelemetry> = {}): NodeTelemetry {
  return {
    node_id: id,
    stamp: 0,
    memory_total_bytes: 16,
    memory_available_bytes: 10,
    cpu_count: 2,
    backends: ["llama_cpp-cpu", "mlx-cpu"],
    has_worker: true,
    api_url: `http://${id}:52415`,
    disk_total_bytes: 100,
    disk_free_bytes: 50,
    warm: [],
    ...overrides,
  };
}

export function instanceView(overrides: Partial<InstanceView> = {}): InstanceView {
  return {
    instance_id: "inst-1",
    model_id: "smollm2-135m",
    engine: "mlx",
    sharding: "pipeline",
    status: "loading",
    context_token_limit: 8192,
    ranks: [
      { runner_id: "run-0", node_id: "node-a", rank: 0, world_size: 2, start_layer: 0,
        end_layer: 17, runner_status: "ready" },
      { runner_id: "run-1", node_id: "node-b", rank: 1, world_size: 2, start_layer: 17,
        end_layer: 30, runner_status: "loading" },
    ],
    ...overrides,
  };
}

export function clusterSummary(): ClusterSummary {
  return {
    node_id: "node-a",
    master_node_id: "node-a",
    security: "tls",
    session: "sess-1",
    tasks_in_flight: 0,
    instances: [],
    nodes: ["node-a", "node-b"].map((id) => ({
      node_id: id,
      alive: true,
      api_url: null,
      has_worker: true,
      backends: ["llama_cpp-cpu"],
      memory_available_bytes: 10,
      memory_total_bytes: 16,
      warm: [],
      health: "ok" as const,
      health_reasons: [],
      addresses: [],
    })),
  };
}

export function task(overrides: Partial<Task> = {}): Task {
  return {
    kind: "text_generation",
    task_id: "task-1",
    command_id: "cmd-1",
    instance_id: "inst-1",
    owner_node: "node-a",
    status: "running",
    error: null,
    params: { model_id: "smollm2-135m", max_tokens: 64, messages: [{ role: "user", content: "hi" }] },
    ...overrides,
  };
}

export function clusterState(): ClusterState {
  return {
    instances: {},
    runners: {},
    tasks: {},
    last_event_applied_idx: 3,
    telemetry: {
      "node-a": telemetry("node-a", {
        warm: [{ model_id: "smollm2-135m", instance_id: "inst-1", role: "whole", tokens_per_second: null }],
      }),
      "node-b": telemetry("node-b", { hostname: "studio.local" }),
    },
    topology: { nodes: [], edges: [] },
    node_health: { "node-a": { level: "ok", reasons: [] }, "node-b": { level: "ok", reasons: [] } },
    node_id: "node-a",
    session: "sess-1",
  };
}

export function placementFits(): PlacementFits {
  return {
    waiting_for: [],
    models: [{
      model_id: "smollm2-135m",
      size_bytes: 98_362_432,
      sources: [
        { format: "gguf", size_bytes: 98_362_432, on_this_node: true },
        { format: "mlx", size_bytes: 538_000_000, on_this_node: false },
      ],
      fits: [
        { node_id: "node-a", engine: "llama_cpp", fits: true, needed_bytes: 800, usable_bytes: 1000, reason: null },
        { node_id: "node-a", engine: "mlx", fits: false, needed_bytes: 1600, usable_bytes: 1000,
          reason: "mlx whole needs 1.5 GiB, has 1.0 GiB usable" },
        { node_id: "node-b", engine: "llama_cpp", fits: false, needed_bytes: null, usable_bytes: 0,
          reason: "runs no worker" },
        { node_id: "node-b", engine: "mlx", fits: false, needed_bytes: null, usable_bytes: 0,
          reason: "runs no worker" },
      ],
    }],
  };
}
