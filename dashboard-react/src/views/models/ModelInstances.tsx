import { DeleteInstanceButton } from "../../components/DeleteInstanceButton";
import { RankProgressList } from "../../components/RankProgressList";
import { StatusBadge } from "../../components/StatusBadge";
import { useClusterData } from "../../hooks/ClusterData";

/** The placed instances, with their load progress per rank and a way to remove them. */
export function ModelInstances() {
  const { cluster, refresh } = useClusterData();
  const instances = cluster?.instances ?? [];
  return (
    <section aria-labelledby="placed-title" className="placed-instances">
      <h3 id="placed-title">Placed instances</h3>
      {instances.length === 0 && <p className="muted">No model is placed. Place one above.</p>}
      <ul className="cards">
        {instances.map((instance) => (
          <li key={instance.instance_id} className="panel" data-instance={instance.instance_id}>
            <div className="card-head">
              <span><strong>{instance.model_id}</strong> <code>{instance.instance_id}</code> {instance.engine}</span>
              <StatusBadge status={instance.status} />
            </div>
            <RankProgressList ranks={instance.ranks} />
            <DeleteInstanceButton instanceId={instance.instance_id} onDeleted={refresh} />
          </li>
        ))}
      </ul>
    </section>
  );
}
