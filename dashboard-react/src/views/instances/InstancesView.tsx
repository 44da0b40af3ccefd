import { ErrorNote } from "../../components/ErrorNote";
import { useClusterData } from "../../hooks/ClusterData";
import { instanceRows, requestsInFlight } from "../../state/instances";
import { InstanceCard } from "./InstanceCard";

export function InstancesView() {
  const { state, cluster, error, refresh } = useClusterData();
  const rows = cluster ? instanceRows(cluster.instances, state) : [];
  return (
    <section aria-labelledby="instances-title">
      <h2 id="instances-title">Instances</h2>
      <ErrorNote error={error} what="read the instances" />
      <p className="stats-line">
        <strong>{rows.length}</strong> instances · <strong>{requestsInFlight(state)}</strong> requests in flight
      </p>
      {cluster && rows.length === 0 && <p className="muted">No instances. Place a model from the Models view.</p>}
      <div className="instance-cards">
        {rows.map((row) => <InstanceCard key={row.instance_id} row={row} onDeleted={refresh} />)}
      </div>
    </section>
  );
}
