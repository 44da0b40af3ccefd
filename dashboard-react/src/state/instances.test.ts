import { describe, expect, it } from "vitest";
import { instanceRows, rankProgress, requestsInFlight } from "./instances";
import { clusterState, instanceView, task } from "../test-fixtures";

describe("rank progress", () => {
  it("moves on with each step of the runner's life and is full when it serves", () => {
    const fractions = ["pending", "created", "loading", "loaded", "warming_up", "ready"].map(
      (s) => rankProgress(s).fraction);
    expect(fractions).toEqual([...fractions].sort((a, b) => a - b));
    expect(new Set(fractions).size).toBe(fractions.length);
    expect(rankProgress("ready")).toEqual({ fraction: 1, label: "ready", tone: "done" });
    expect(rankProgress("warming_up").label).toBe("warming up");
    expect(rankProgress("failed").tone).toBe("failed");
    expect(rankProgress("pending").label).toBe("waiting for its node");
  });
});

describe("fetch progress", () => {
  it("fills the first step byte by byte and names the source", () => {
    const half = rankProgress("fetching", { done_bytes: 50, total_bytes: 100, source: "peer node-a" });
    const created = rankProgress("created");
    expect(half.label).toBe("fetching 50% from peer node-a");
    expect(half.fraction).toBeGreaterThan(rankProgress("pending").fraction);
    expect(half.fraction).toBeLessThan(created.fraction);
    const all = rankProgress("fetching", { done_bytes: 100, total_bytes: 100, source: "hub org/m" });
    expect(all.fraction).toBeGreaterThan(half.fraction);
    expect(all.fraction).toBeLessThanOrEqual(created.fraction);
  });
});

describe("instance rows", () => {
  it("orders ranks, attaches the requests, the drafter and the ring port", () => {
    const state = clusterState();
    state.instances["inst-1"] = {
      instance_id: "inst-1", model_id: "smollm2-135m", engine: "mlx", sharding: "pipeline",
      shards: {}, context_token_limit: 8192, ring_port: 52500, drafter: "ngram",
    };
    state.tasks = {
      "task-1": task({ params: { ...task().params, speculative: { drafter: "ngram", max_draft: 4 } } }),
      "task-2": task({ task_id: "task-2", instance_id: "other" }),
    };
    const view = instanceView();
    view.ranks.reverse();
    const [row] = instanceRows([view], state);
    expect(row!.ranks.map((r) => r.rank)).toEqual([0, 1]);
    expect(row!.progress.map((p) => p.tone)).toEqual(["done", "progress"]);
    expect(row!.drafter).toBe("ngram");
    expect(row!.ringPort).toBe(52500);
    expect(row!.requests).toEqual([{ taskId: "task-1", commandId: "cmd-1", status: "running",
      ownerNode: "node-a", maxTokens: 64, drafter: "ngram" }]);
  });

  it("has no drafter when the instance carries none, and counts requests in flight", () => {
    const [row] = instanceRows([instanceView()], clusterState());
    expect(row!.drafter).toBeNull();
    const state = clusterState();
    state.tasks = { a: task(), b: task({ task_id: "b", status: "complete" }), c: task({ task_id: "c", status: "pending" }) };
    expect(requestsInFlight(state)).toBe(2);
    expect(requestsInFlight(null)).toBe(0);
  });
});
