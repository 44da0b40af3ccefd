import { HealthBadge } from "../../components/HealthBadge";
import { Meter } from "../../components/Meter";
import type { GraphNode, Usage } from "../../state/cluster";
import { formatBytes } from "../../state/format";

function usageMeter(label: string, usage: Usage | null) {
  if (!usage) return <p className="muted">{label}: not reported</p>;
  return <Meter label={label} fraction={usage.fraction}
    valueText={`${formatBytes(usage.used)} of ${formatBytes(usage.total)} used`} />;
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
