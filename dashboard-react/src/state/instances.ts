// Instances with their ranks, runner progress, drafter and the requests they serve.

import type { ClusterState, InstanceRank, InstanceView, RunnerKind, Task } from "../api/types";

// A runner's life before it serves, in order; each step moves its progress bar on.
export const RUNNER_STEPS: RunnerKind[] = ["fetching", "created", "loading", "loaded", "warming_up", "ready"];

export interface RankProgress {
  fraction: number;
  label: string;
  tone: "progress" | "done" | "failed";
}

export function rankProgress(status: string, fetch?: InstanceRank["fetch"]): RankProgress {
  if (status === "fetching" && fetch && fetch.total_bytes > 0) {
    // The fetch fills the first step's share of the bar, byte by byte.
    const done = Math.min(fetch.done_bytes / fetch.total_bytes, 1);
    const percent = Math.round(done * 100);
    return { fraction: done / (RUNNER_STEPS.length + 1), label: `fetching ${percent}% from ${fetch.source}`, tone: "progress" };
  }
  if (status === "failed") return { fraction: 1, label: "failed", tone: "failed" };
  if (status === "shutdown") return { fraction: 1, label: "shut down", tone: "failed" };
  if (status === "ready" || status === "running") return { fraction: 1, label: status, tone: "done" };
  const step = RUNNER_STEPS.indexOf(status as RunnerKind);
  if (step < 0) return { fraction: 0, label: "waiting for its node", tone: "progress" };
  return { fraction: (step + 1) / (RUNNER_STEPS.length + 1), label: status.replace("_", " "), tone: "progress" };
}

export interface RequestRow {
  taskId: string;
  commandId: string;
  status: string;
  ownerNode: string;
  maxTokens: number | null;
  drafter: string | null;
}

export interface InstanceRow extends InstanceView {
  drafter: string | null;
  ringPort: number | null;
  requests: RequestRow[];
  progress: RankProgress[];
}

function requestRow(task: Task): RequestRow {
  return {
    taskId: task.task_id,
    commandId: task.command_id,
    status: task.status,
    ownerNode: task.owner_node,
    maxTokens: task.params.max_tokens,
    drafter: task.params.speculative?.drafter ?? null,
  };
}

export function instanceRows(instances: InstanceView[], state: ClusterState | null): InstanceRow[] {
  const tasks = Object.values(state?.tasks ?? {});
  return [...instances]
    .sort((a, b) => a.model_id.localeCompare(b.model_id) || a.instance_id.localeCompare(b.instance_id))
    .map((instance) => {
      const stamped = state?.instances[instance.instance_id];
      return {
        ...instance,
        ranks: [...instance.ranks].sort((a, b) => a.rank - b.rank),
        drafter: stamped?.drafter ?? null,
        ringPort: stamped?.ring_port ?? null,
        requests: tasks.filter((t) => t.instance_id === instance.instance_id).map(requestRow),
        progress: [...instance.ranks].sort((a, b) => a.rank - b.rank).map((r) => rankProgress(r.runner_status, r.fetch)),
      };
    });
}

/** Requests in flight on the whole cluster, for the header of the Instances view. */
export function requestsInFlight(state: ClusterState | null): number {
  return Object.values(state?.tasks ?? {}).filter((t) => t.status === "pending" || t.status === "running").length;
}
