import type { ClusterGraph as Graph } from "../../state/cluster";
import { formatMs } from "../../state/format";

const SIZE = 400;
const RADIUS = 34;

/** Nodes on a circle with their observed links; the master wears a ring. */
export function ClusterGraph({ graph }: { graph: Graph }) {
  const at = new Map(graph.nodes.map((n) => [n.id, { x: n.x * SIZE, y: n.y * SIZE }]));
  const summary = `${graph.nodes.length} node${graph.nodes.length === 1 ? "" : "s"}, ${graph.links.length} link${
    graph.links.length === 1 ? "" : "s"}; master ${graph.masterId ?? "not elected"}`;
  return (
    <svg className="graph" viewBox={`0 0 ${SIZE} ${SIZE}`} role="img" aria-label={`Cluster graph: ${summary}`}>
      {graph.links.map((link) => {
        const a = at.get(link.a)!;
        const b = at.get(link.b)!;
        return (
          <g key={`${link.a}|${link.b}`} className={`link ${link.bothWays ? "" : "one-way"}`}>
            <line x1={a.x} y1={a.y} x2={b.x} y2={b.y} />
            <text x={(a.x + b.x) / 2} y={(a.y + b.y) / 2 - 4} textAnchor="middle" className="link-label">
              {link.rttMs === null ? "" : formatMs(link.rttMs)}
            </text>
            <title>{`${link.a} ↔ ${link.b}${link.bothWays ? "" : " (one way only)"}`}</title>
          </g>
        );
      })}
      {graph.nodes.map((node) => {
        const { x, y } = at.get(node.id)!;
        return (
          <g key={node.id} className={`graph-node health-${node.health} ${node.alive ? "" : "gone"}`} data-node={node.id}>
            {node.isMaster && <circle cx={x} cy={y} r={RADIUS + 7} className="master-ring" />}
            <circle cx={x} cy={y} r={RADIUS} className="node-disc" />
            <text x={x} y={y - 2} textAnchor="middle" className="node-name">{node.id.replace(/^node-/, "").slice(0, 8)}</text>
            <text x={x} y={y + 13} textAnchor="middle" className="node-role">
              {node.isMaster ? "master" : node.alive ? "worker" : "gone"}
            </text>
            <title>{`${node.id}${node.isMaster ? " (master)" : ""}${node.isSelf ? " (this node)" : ""}: ${node.health}`}</title>
          </g>
        );
      })}
    </svg>
  );
}
