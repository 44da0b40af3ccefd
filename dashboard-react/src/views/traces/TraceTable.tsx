import type { TraceListEntry } from "../../state/traces";
import { formatClock, formatMs } from "../../state/format";

interface Props {
  traces: TraceListEntry[];
  selected: string | null;
  onOpen: (id: string) => void;
}

export function TraceTable({ traces, selected, onOpen }: Props) {
  return (
    <div className="table-wrap">
      <table>
        <caption className="sr-only">Recent traces</caption>
        <thead>
          <tr>
            <th scope="col">Started</th><th scope="col">Model</th><th scope="col">Duration</th>
            <th scope="col">Spans</th><th scope="col">Nodes</th><th scope="col"><span className="sr-only">Open</span></th>
          </tr>
        </thead>
        <tbody>
          {traces.map((t) => (
            <tr key={t.trace_id} aria-selected={t.trace_id === selected} data-trace={t.trace_id}>
              <td>{formatClock(t.started_us / 1e6)}</td>
              <td>{t.model}</td>
              <td>{formatMs(t.duration_ms)}{t.finished ? "" : " (running)"}</td>
              <td>{t.spans}</td>
              <td>{t.nodes.join(", ")}</td>
              <td><button type="button" onClick={() => onOpen(t.trace_id)} aria-label={`Open trace ${t.trace_id}`}>Open</button></td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
