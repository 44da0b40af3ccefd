import { useState } from "react";
import type { NodeLatest } from "../../api/history";
import { formatBytes } from "../../state/format";
import { formatSeconds, lastValue, NODE_ORDERS, type NodeOrder, nodesToShow } from "../../state/history";

const SHOWN_AT_FIRST = 20;

/** Every node's latest sample, busiest first, filtered by id: on a large cluster, where to
 * look; choosing a row opens that node's charts. */
export function NodeTable({ nodes, chosen, onChoose }: {
  nodes: NodeLatest[];
  chosen: string | null;
  onChoose: (nodeId: string | null) => void;
}) {
  const [order, setOrder] = useState<NodeOrder>("tokens");
  const [filter, setFilter] = useState("");
  const [all, setAll] = useState(false);
  const shown = nodesToShow(nodes, order, filter, all ? nodes.length : SHOWN_AT_FIRST);
  const value = (node: NodeLatest, field: Parameters<typeof lastValue>[1]) => lastValue(node.latest, field);
  return (
    <div>
      <div className="row">
        <label>Order by{" "}
          <select value={order} onChange={(e) => setOrder(e.target.value as NodeOrder)}>
            {Object.entries(NODE_ORDERS).map(([key, title]) => <option key={key} value={key}>{title}</option>)}
          </select>
        </label>
        <label>Find a node <input type="search" value={filter} onChange={(e) => setFilter(e.target.value)} /></label>
        <span className="muted small">{shown.length} of {nodes.length} nodes</span>
        {nodes.length > SHOWN_AT_FIRST && (
          <button type="button" onClick={() => setAll(!all)}>{all ? `Show the first ${SHOWN_AT_FIRST}` : "Show all"}</button>
        )}
      </div>
      <div className="table-wrap">
        <table className="node-table">
          <caption className="sr-only">Each node's latest sample; choose one to see its charts</caption>
          <thead>
            <tr>
              <th scope="col">Node</th><th scope="col">tokens/s</th><th scope="col">TTFT p95</th>
              <th scope="col">queue</th><th scope="col">refused/s</th><th scope="col">CPU</th>
              <th scope="col">memory</th><th scope="col">restarts (1 h)</th>
            </tr>
          </thead>
          <tbody>
            {shown.map((node) => (
              <tr key={node.node_id} data-node={node.node_id} aria-selected={node.node_id === chosen}>
                <td>
                  <button type="button" className="link-button" aria-pressed={node.node_id === chosen}
                    onClick={() => onChoose(node.node_id === chosen ? null : node.node_id)}>
                    {node.node_id}
                  </button>
                </td>
                <td>{value(node, "decode_tokens_per_second")?.toFixed(1) ?? "–"}</td>
                <td>{formatSeconds(value(node, "ttft_p95_seconds"))}</td>
                <td>{value(node, "queue_depth") ?? "–"}</td>
                <td>{value(node, "admissions_refused_per_second")?.toFixed(2) ?? "–"}</td>
                <td>{value(node, "cpu_percent") === null ? "–" : `${value(node, "cpu_percent")!.toFixed(0)}%`}</td>
                <td>{formatBytes(value(node, "memory_used_bytes"))}</td>
                <td>{node.runner_restarts}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </div>
  );
}
