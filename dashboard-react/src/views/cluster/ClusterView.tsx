import { useState } from "react";
import { ErrorNote } from "../../components/ErrorNote";
import { useClusterData } from "../../hooks/ClusterData";
import { buildClusterGraph } from "../../state/cluster";
import { requestsInFlight } from "../../state/instances";
import { isLarge, worthALook } from "../../state/clusterGroups";
import { ClusterGraph } from "./ClusterGraph";
import { ClusterGroups } from "./ClusterGroups";
import { NodeCard } from "./NodeCard";

export function ClusterView() {
  const { state, cluster, error } = useClusterData();
  const [everyCard, setEveryCard] = useState(false);
  if (!state || !cluster) {
    return <><ErrorNote error={error} what="read the cluster" /><p className="muted">Reading the cluster…</p></>;
  }
  const graph = buildClusterGraph(cluster, state);
  const alive = graph.nodes.filter((n) => n.alive).length;
  // Past a couple of dozen nodes: groups instead of a circle, cards only for those worth
  // a look until asked for all.
  const large = isLarge(graph);
  const carded = large && !everyCard ? graph.nodes.filter(worthALook) : graph.nodes;
  return (
    <section aria-labelledby="cluster-title">
      <h2 id="cluster-title">Cluster</h2>
      <ErrorNote error={error} what="refresh the cluster" />
      {cluster.security === "insecure" && (
        <p className="warning" role="alert">
          Insecure cluster: links between nodes are plain TCP and anyone who reaches a node's
          port is a member. Restart the nodes without <code>--insecure</code> to require the join token.
        </p>
      )}
      <ul className="stats" aria-label="Cluster summary">
        <li><strong>{alive}</strong> of {graph.nodes.length} nodes alive</li>
        <li>master <strong>{cluster.master_node_id ?? "not elected"}</strong></li>
        <li><strong>{cluster.instances.length}</strong> instances</li>
        <li><strong>{requestsInFlight(state)}</strong> requests in flight</li>
        <li>event <strong>{state.last_event_applied_idx}</strong> of session <code>{state.session ?? "–"}</code></li>
      </ul>
      <div className="cluster-layout">
        <div className="panel graph-panel">
          {large ? <ClusterGroups graph={graph} /> : <ClusterGraph graph={graph} />}
        </div>
        <div className="node-cards">
          {carded.map((node) => <NodeCard key={node.id} node={node} />)}
          {carded.length < graph.nodes.length && (
            <button type="button" onClick={() => setEveryCard(true)}>
              Show all {graph.nodes.length} nodes ({graph.nodes.length - carded.length} more, up and healthy)
            </button>
          )}
        </div>
      </div>
    </section>
  );
}
