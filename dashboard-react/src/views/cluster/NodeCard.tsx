import { HealthBadge } from "../../components/HealthBadge";
import { Meter } from "../../components/Meter";
import type { GpuView, GraphNode, Usage } from "../../state/cluster";
import { formatBytes } from "../../state/format";

function usageMeter(label: string, usage: Usage | null) {
  if (!usage) return <p className="muted">{label}: not reported</p>;
  return <Meter key={label} label={label} fraction={usage.fraction}
    valueText={`${formatBytes(usage.used)} of ${formatBytes(usage.total)} used`} />;
}

/** A meter per GPU, labelled with its name and backend tag; or why there is none. */
function gpuMeters(gpus: GpuView[] | null, hasWorker: boolean | null) {
  if (gpus === null) return <p className="muted">GPUs: not reported</p>;
  if (gpus.length === 0) return hasWorker ? <p className="muted">GPUs: none (CPU only)</p> : null;
  return gpus.map((gpu, i) => {
    const label = `GPU ${i}: ${gpu.name} (${gpu.backend})`;
    return gpu.memory ? usageMeter(label, gpu.memory)
      : <p key={label} className="muted">{label}: memory not known</p>;
  });
}

export function NodeCard({ node }: { node: GraphNode }) {
  return (
    <article className={`panel node-card ${node.alive ? "" : "gone"}`} aria-labelledby={`node-${node.id}`} data-node={node.id}>
      <header className="card-head">
        <div className="node-name">
          <h3 id={`node-${node.id}`}>{node.id}</h3>
          {node.hostname && <span className="hostname" title="host name">{node.hostname}</span>}
        </div>
        <div className="badges">
          {node.isMaster && <span className="badge accent">master</span>}
          {node.isSelf && <span className="badge neutral">this node</span>}
          {!node.alive && <span className="badge health-error">gone</span>}
          <HealthBadge level={node.health} reasons={node.reasons} />
        </div>
      </header>
      {usageMeter("Memory", node.memory)}
      {usageMeter("Disk", node.disk)}
      {gpuMeters(node.gpus, node.hasWorker)}
      <dl className="facts">
        <dt>Backends</dt>
        <dd>{node.backends.length ? node.backends.map((b) => <span key={b} className="chip">{b}</span>) : "none"}</dd>
        <dt>Runs models</dt>
        <dd>{node.hasWorker === null ? "unknown" : node.hasWorker ? "yes" : "no (API only)"}</dd>
        <dt>Serving</dt>
        <dd>{node.warm.length ? node.warm.join(", ") : "nothing yet"}</dd>
        {node.apiUrl && (<><dt>API</dt><dd><code>{node.apiUrl}</code></dd></>)}
      </dl>
    </article>
  );
}
