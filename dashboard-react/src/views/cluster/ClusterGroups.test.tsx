// @vitest-environment jsdom
import { fireEvent, render, screen, within } from "@testing-library/react";
import { describe, expect, it } from "vitest";
import type { ClusterState, ClusterSummary } from "../../api/types";
import { ClusterDataContext, type ClusterData } from "../../hooks/ClusterData";
import { clusterState, clusterSummary, telemetry } from "../../test-fixtures";
import { ClusterView } from "./ClusterView";

const COUNT = 200;
const ids = Array.from({ length: COUNT }, (_, i) => `node-${String(i).padStart(3, "0")}`);

/** 200 nodes on 10 hosts: node-000 the master and this node, node-007 gone, node-011 and
 *  node-012 warning, node-013 in error, everyone linked to the next node. */
function twoHundred(): { state: ClusterState; cluster: ClusterSummary } {
  const base = clusterSummary();
  const template = base.nodes[0]!;
  const health = (id: string) => (id === "node-013" ? "error" : id === "node-011" || id === "node-012" ? "warn" : "ok");
  const cluster: ClusterSummary = {
    ...base,
    node_id: "node-000",
    master_node_id: "node-000",
    nodes: ids.map((id) => ({ ...template, node_id: id, alive: id !== "node-007", health: health(id) })),
  };
  const state: ClusterState = {
    ...clusterState(),
    node_id: "node-000",
    telemetry: Object.fromEntries(ids.map((id, i) => [id, telemetry(id, { hostname: `rack-${i % 10}` })])),
    node_health: Object.fromEntries(ids.map((id) => [id, { level: health(id), reasons: [] }])),
    topology: {
      nodes: [],
      edges: ids.map((id, i) => ({ from_node: id, to_node: ids[(i + 1) % COUNT]!, addresses: [], observed_at: 0 })),
    },
  };
  return { state, cluster };
}

function view(data: { state: ClusterState; cluster: ClusterSummary }) {
  const value: ClusterData = { ...data, error: null, refresh: () => {} };
  return render(<ClusterDataContext.Provider value={value}><ClusterView /></ClusterDataContext.Provider>);
}

describe("a cluster of 200 nodes", () => {
  it("is drawn by groups, worst first, every node a dot", () => {
    view(twoHundred());
    const map = screen.getByLabelText("Cluster map: 200 nodes, 200 links observed");
    const groups = within(map).getAllByRole("region").map((g) => g.getAttribute("aria-label"));
    expect(groups).toEqual(["Gone: 1 nodes", "Errors: 1 nodes", "Warnings: 2 nodes", "Healthy: 196 nodes"]);
    expect(map.querySelectorAll("[data-node]")).toHaveLength(COUNT);
    expect(map.querySelectorAll(".master-ring")).toHaveLength(1);
    expect(screen.queryByRole("img", { name: /Cluster graph/ })).toBeNull();
  });

  it("gives cards to the nodes worth a look, and to every node when asked", () => {
    view(twoHundred());
    const cards = () => screen.getAllByRole("article").map((a) => a.getAttribute("data-node"));
    expect(cards()).toEqual(["node-000", "node-007", "node-011", "node-012", "node-013"]);
    fireEvent.click(screen.getByRole("button", { name: "Show all 200 nodes (195 more, up and healthy)" }));
    expect(cards()).toHaveLength(COUNT);
    expect(screen.getByRole("list", { name: "Cluster summary" }).textContent).toContain("199 of 200 nodes alive");
  });
});
