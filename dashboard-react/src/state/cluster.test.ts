import { describe, expect, it } from "vitest";
import { buildClusterGraph, buildLinks, circleLayout, healthText, usage } from "./cluster";
import { clusterSummary, clusterState, telemetry } from "../test-fixtures";

describe("cluster graph", () => {
  it("marks the master and this node, with memory and disk use", () => {
    const graph = buildClusterGraph(clusterSummary(), clusterState());
    expect(graph.nodes.map((n) => n.id)).toEqual(["node-a", "node-b"]);
    const [a, b] = graph.nodes;
    expect(a!.isMaster && a!.isSelf).toBe(true);
    expect(b!.isMaster || b!.isSelf).toBe(false);
    expect(a!.memory).toEqual({ used: 6, total: 16, fraction: 6 / 16 });
    expect(a!.disk?.fraction).toBeCloseTo(0.5);
    expect(a!.backends).toEqual(["llama_cpp-cpu", "mlx-cpu"]);
    expect(a!.warm).toEqual(["smollm2-135m (whole)"]);
  });

  it("carries each node's GPUs with their backend and memory in use", () => {
    const state = clusterState();
    state.telemetry["node-a"]!.gpus = [
      { name: "NVIDIA H200", backend: "cuda", vram_total_bytes: 140, vram_free_bytes: 105 },
      { name: "Radeon", backend: "vulkan", vram_total_bytes: 0, vram_free_bytes: 0 },
    ];
    state.telemetry["node-b"]!.gpus = [];
    const [a, b] = buildClusterGraph(clusterSummary(), state).nodes;
    expect(a!.gpus).toEqual([
      { name: "NVIDIA H200", backend: "cuda", memory: { used: 35, total: 140, fraction: 0.25 } },
      { name: "Radeon", backend: "vulkan", memory: null },
    ]);
    expect(b!.gpus).toEqual([]);
    expect(buildClusterGraph(clusterSummary(), clusterState()).nodes[0]!.gpus).toBeNull();
  });

  it("carries the health and reasons of each node", () => {
    const state = clusterState();
    state.node_health["node-b"] = {
      level: "warn",
      reasons: [{ code: "disk_low", level: "warn", message: "3.0 GiB disk left", remedy: "free space" }],
    };
    const b = buildClusterGraph(clusterSummary(), state).nodes[1]!;
    expect(b.health).toBe("warn");
    expect(healthText(b.health, b.reasons)).toBe("3.0 GiB disk left. Fix: free space.");
    expect(healthText("ok", [])).toMatch(/Healthy/);
  });

  it("shows a node that left as not alive and one that joined with its readings", () => {
    const summary = clusterSummary();
    summary.nodes[1]!.alive = false;
    const state = clusterState();
    state.telemetry["node-c"] = telemetry("node-c");
    const graph = buildClusterGraph(summary, state);
    expect(graph.nodes.map((n) => [n.id, n.alive])).toEqual([
      ["node-a", true], ["node-b", false], ["node-c", false]]);
    expect(graph.nodes[2]!.memory).not.toBeNull();
  });

  it("joins the two directions of an edge into one link with the best RTT", () => {
    const state = clusterState();
    state.topology.edges = [
      { from_node: "node-a", to_node: "node-b", addresses: [{ address: "10.0.0.2", rtt_ms: 0.4 }] },
      { from_node: "node-b", to_node: "node-a", addresses: [{ address: "10.0.0.1", rtt_ms: 0.2 }] },
      { from_node: "node-b", to_node: "node-x", addresses: [] },
    ];
    expect(buildLinks(state, new Set(["node-a", "node-b"]))).toEqual([
      { a: "node-a", b: "node-b", bothWays: true, rttMs: 0.2 }]);
    state.topology.edges = state.topology.edges.slice(0, 1);
    expect(buildLinks(state, new Set(["node-a", "node-b"]))[0]!.bothWays).toBe(false);
  });

  it("lays out nodes on a circle and one node in the middle", () => {
    expect(circleLayout(1)).toEqual([{ x: 0.5, y: 0.5 }]);
    const four = circleLayout(4);
    expect(four[0]!.x).toBeCloseTo(0.5);
    expect(four[0]!.y).toBeCloseTo(0.15);
    expect(four[2]!.y).toBeCloseTo(0.85);
  });

  it("has no usage without a total", () => {
    expect(usage(0, 0)).toBeNull();
    expect(usage(null, 5)).toBeNull();
    expect(usage(10, 12)?.fraction).toBe(0);
  });
});
