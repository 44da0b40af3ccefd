import { useCallback, useRef, useState } from "react";
import { type ClusterHistory, historyApi } from "../../api/history";
import { ErrorNote } from "../../components/ErrorNote";
import { TimeChart } from "../../components/TimeChart";
import { usePoll } from "../../hooks/usePoll";
import { CLUSTER_CHARTS, HISTORY_POLL_MS, mergeHistory, nextSince } from "../../state/history";
import "./charts.css";
import { InstanceCharts } from "./InstanceCharts";
import { MarkerList } from "./MarkerList";
import { NodeCharts } from "./NodeCharts";
import { NodeTable } from "./NodeTable";

/** The last hour, live: the whole cluster first, then each instance and each node. */
export function ChartsView() {
  // Polls ask only for the slots after those held, and add them on.
  const held = useRef<ClusterHistory | null>(null);
  const fetchNewer = useCallback(async () => {
    held.current = mergeHistory(held.current, await historyApi.cluster(nextSince(held.current)));
    return held.current;
  }, []);
  const { data, error } = usePoll(fetchNewer, HISTORY_POLL_MS);
  const [nodeId, setNodeId] = useState<string | null>(null);
  const silent = Object.entries(data?.errors ?? {});
  return (
    <section aria-labelledby="charts-title">
      <h2 id="charts-title">Charts</h2>
      <ErrorNote error={error} what="read the history" />
      {data && (
        <>
          <p className="muted small" aria-live="polite">
            The last hour, a sample every {data.interval_seconds} s, from {data.nodes.length} node
            {data.nodes.length === 1 ? "" : "s"}; lines mark failovers, evictions, placements, joins and leaves.
            {silent.length > 0 && ` ${silent.length} did not answer: ${silent.map(([n, why]) => `${n} (${why})`).join("; ")}.`}
          </p>
          <h3>Cluster</h3>
          <div className="chart-grid">
            {CLUSTER_CHARTS.map((spec) => (
              <TimeChart key={spec.id} spec={spec} series={data.cluster} markers={data.markers} />
            ))}
          </div>
          <h3>What happened</h3>
          <MarkerList markers={data.markers} />
          <h3>Instances</h3>
          {data.instances.length === 0 && <p className="muted small">No instance served in the last hour.</p>}
          {data.instances.map((instance) => (
            <InstanceCharts key={instance.instance_id} instance={instance} markers={data.markers} />
          ))}
          <h3>Nodes</h3>
          <NodeTable nodes={data.nodes} chosen={nodeId} onChoose={setNodeId} />
          {nodeId && <NodeCharts nodeId={nodeId} />}
        </>
      )}
    </section>
  );
}
