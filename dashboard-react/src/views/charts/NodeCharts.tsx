import { useCallback } from "react";
import { historyApi } from "../../api/history";
import { ErrorNote } from "../../components/ErrorNote";
import { TimeChart } from "../../components/TimeChart";
import { usePoll } from "../../hooks/usePoll";
import { CLUSTER_CHARTS, HISTORY_POLL_MS, markersWithin } from "../../state/history";

/** One node's last hour, fetched only while it is open. */
export function NodeCharts({ nodeId }: { nodeId: string }) {
  const fetchNode = useCallback(() => historyApi.node(nodeId), [nodeId]);
  const { data, error } = usePoll(fetchNode, HISTORY_POLL_MS);
  const series = data?.node_id === nodeId ? data.series : null;
  return (
    <section aria-label={`Charts of node ${nodeId}`} className="panel" data-node-charts={nodeId}>
      <h4>Node {nodeId}</h4>
      <ErrorNote error={error} what={`read node ${nodeId}'s history`} />
      {series && (
        <div className="chart-grid">
          {CLUSTER_CHARTS.map((spec) => (
            <TimeChart key={spec.id} spec={spec} series={series}
              markers={markersWithin(data!.markers, -Infinity, Infinity, { nodeId })} />
          ))}
        </div>
      )}
    </section>
  );
}
