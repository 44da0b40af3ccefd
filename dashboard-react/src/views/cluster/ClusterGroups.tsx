import type { ClusterGraph } from "../../state/cluster";
import { groupNodes } from "../../state/clusterGroups";

const PER_ROW = 25;
const STEP = 16;
const DOT = 6;

/** A large cluster as one row of dots per group (gone, errors, warnings, healthy), each
 *  dot a node with its health's colour, the master ringed; hover names it. */
export function ClusterGroups({ graph }: { graph: ClusterGraph }) {
  const groups = groupNodes(graph.nodes);
  return (
    <div className="node-groups" aria-label={`Cluster map: ${graph.nodes.length} nodes, ${graph.links.length} links observed`}>
      {groups.map((group) => {
        const rows = Math.ceil(group.nodes.length / PER_ROW);
        return (
          <section key={group.key} aria-label={`${group.label}: ${group.nodes.length} nodes`}>
            <h3>{group.label} <span className="muted">{group.nodes.length}</span></h3>
            <svg className="graph" viewBox={`0 0 ${PER_ROW * STEP} ${rows * STEP}`} role="img"
              aria-label={`${group.label}: ${group.nodes.length} nodes`}>
              {group.nodes.map((node, i) => {
                const x = (i % PER_ROW) * STEP + STEP / 2;
                const y = Math.floor(i / PER_ROW) * STEP + STEP / 2;
                return (
                  <g key={node.id} className={`graph-node health-${node.health} ${node.alive ? "" : "gone"}`} data-node={node.id}>
                    {node.isMaster && <circle cx={x} cy={y} r={DOT + 1.5} className="master-ring" />}
                    <circle cx={x} cy={y} r={DOT - 1} className="node-disc" />
                    <title>{`${node.id}${node.hostname ? ` on ${node.hostname}` : ""}${node.isMaster ? " (master)" : ""}${
                      node.isSelf ? " (this node)" : ""}: ${node.alive ? node.health : "gone"}`}</title>
                  </g>
                );
              })}
            </svg>
          </section>
        );
      })}
    </div>
  );
}
