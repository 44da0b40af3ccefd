import { DeleteInstanceButton } from "../../components/DeleteInstanceButton";
import { Meter } from "../../components/Meter";
import { StatusBadge } from "../../components/StatusBadge";
import { formatLayers } from "../../state/format";
import type { InstanceRow } from "../../state/instances";

export function InstanceCard({ row, onDeleted }: { row: InstanceRow; onDeleted: () => void }) {
  return (
    <article className="panel instance-card" aria-labelledby={`inst-${row.instance_id}`} data-instance={row.instance_id}>
      <header className="card-head">
        <h3 id={`inst-${row.instance_id}`}>{row.model_id} <code className="small">{row.instance_id}</code></h3>
        <StatusBadge status={row.status} />
      </header>
      <dl className="facts inline">
        <dt>Engine</dt><dd>{row.engine}</dd>
        <dt>Sharding</dt><dd>{row.sharding}</dd>
        <dt>Context</dt><dd>{row.context_token_limit.toLocaleString()} tokens</dd>
        <dt>Drafter</dt><dd>{row.drafter ?? "none"}</dd>
        {row.ringPort !== null && (<><dt>Ring port</dt><dd>{row.ringPort}</dd></>)}
      </dl>
      <div className="table-wrap">
        <table className="compact">
          <caption className="sr-only">Ranks of {row.instance_id}</caption>
          <thead>
            <tr><th scope="col">Rank</th><th scope="col">Node</th><th scope="col">Layers</th><th scope="col">Runner</th></tr>
          </thead>
          <tbody>
            {row.ranks.map((rank, i) => (
              <tr key={rank.runner_id}>
                <td>{rank.rank} / {rank.world_size}</td>
                <td>{rank.node_id}</td>
                <td>{formatLayers(rank.start_layer, rank.end_layer)}</td>
                <td className="runner-cell">
                  <Meter kind="progressbar" label={`Runner ${rank.runner_id}`} fraction={row.progress[i]!.fraction}
                    valueText={row.progress[i]!.label}
                    tone={row.progress[i]!.tone === "progress" ? "normal" : row.progress[i]!.tone} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      <h4>Requests in flight</h4>
      {row.requests.length === 0 ? <p className="muted">None.</p> : (
        <ul className="requests">
          {row.requests.map((r) => (
            <li key={r.taskId}>
              <code>{r.commandId}</code> <StatusBadge status={r.status} /> from {r.ownerNode}
              {r.maxTokens !== null && <span className="muted"> · up to {r.maxTokens} tokens</span>}
              {r.drafter && <span className="muted"> · drafter {r.drafter}</span>}
            </li>
          ))}
        </ul>
      )}
      <DeleteInstanceButton instanceId={row.instance_id} onDeleted={onDeleted} />
    </article>
  );
}
