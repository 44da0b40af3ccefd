// A large cluster drawn by groups: past GROUP_ABOVE nodes a circle of discs and their
// links is a blot, so the nodes are grouped by how they fare (gone, errors, warnings,
// healthy) and, within a group, by host; only the nodes worth a look get a card.

import type { ClusterGraph, GraphNode } from "./cluster";

export const GROUP_ABOVE = 24;

export interface NodeGroup {
  key: "gone" | "error" | "warn" | "ok";
  label: string;
  nodes: GraphNode[];
}

const GROUPS: { key: NodeGroup["key"]; label: string }[] = [
  { key: "gone", label: "Gone" },
  { key: "error", label: "Errors" },
  { key: "warn", label: "Warnings" },
  { key: "ok", label: "Healthy" },
];

function groupOf(node: GraphNode): NodeGroup["key"] {
  return node.alive ? node.health : "gone";
}

/** The non-empty groups, worst first; each group's nodes by host name, then id. */
export function groupNodes(nodes: GraphNode[]): NodeGroup[] {
  const byHost = (a: GraphNode, b: GraphNode) =>
    (a.hostname ?? "").localeCompare(b.hostname ?? "") || a.id.localeCompare(b.id);
  return GROUPS.map(({ key, label }) => ({
    key,
    label,
    nodes: nodes.filter((n) => groupOf(n) === key).sort(byHost),
  })).filter((group) => group.nodes.length > 0);
}

/** A node whose card is shown in a large cluster: this one, the master, any in trouble,
 *  any serving a model. */
export function worthALook(node: GraphNode): boolean {
  return node.isMaster || node.isSelf || !node.alive || node.health !== "ok" || node.warm.length > 0;
}

export function isLarge(graph: ClusterGraph): boolean {
  return graph.nodes.length > GROUP_ABOVE;
}
