import type { CatalogueRow } from "../../state/models";
import { formatBytes } from "../../state/format";

interface Props {
  rows: CatalogueRow[];
  onPlace: (modelId: string) => void;
}

export function CatalogueTable({ rows, onPlace }: Props) {
  return (
    <div className="table-wrap">
      <table>
        <caption className="sr-only">Models the cluster knows, where their weights are, and where they fit</caption>
        <thead>
          <tr>
            <th scope="col">Model</th>
            <th scope="col">Size</th>
            <th scope="col">Formats</th>
            <th scope="col">Weights</th>
            <th scope="col">Fits whole on</th>
            <th scope="col">Instances</th>
            <th scope="col"><span className="sr-only">Actions</span></th>
          </tr>
        </thead>
        <tbody>
          {rows.map((row) => (
            <tr key={row.id} data-model={row.id}>
              <th scope="row">
                <div>{row.id}</div>
                <div className="muted small">{row.contextLength.toLocaleString()} tokens of context</div>
              </th>
              <td>{formatBytes(row.sizeBytes)}</td>
              <td>
                {row.formats.map((f) => (
                  <span key={f.format} className="chip" title={f.onThisNode ? "on this node's disk" : "not on this node yet"}>
                    {f.format} {formatBytes(f.sizeBytes)}{f.onThisNode ? " ✓" : ""}
                  </span>
                ))}
              </td>
              <td className={`weights ${row.weights.status}`}>
                {row.weights.status === "running" && <span className="chip">running</span>} {row.weights.label}
              </td>
              <td>
                <ul className="verdicts">
                  {row.nodes.map((v) => (
                    <li key={v.nodeId} className={v.fits ? "fits" : "no-fit"}>
                      <span aria-hidden="true">{v.fits ? "✓" : "✗"}</span> {v.nodeId}
                      <span className="muted small"> — {v.detail}{v.weights ? `; ${v.weights}` : ""}</span>
                    </li>
                  ))}
                </ul>
              </td>
              <td>{row.runningInstances}</td>
              <td>
                <button type="button" onClick={() => onPlace(row.id)} aria-label={`Place ${row.id}`}>Place…</button>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
