// Pulls into the nodes' stores, from their readings: what each download has done, and
// which have stopped (a pull killed midway keeps its last progress until run again).

import type { NodeTelemetry } from "../api/types";
import { formatBytes } from "./format";

/** A pull whose progress has not moved for this long is shown as stopped. */
export const STOPPED_AFTER_SECONDS = 30;

export interface DownloadRow {
  key: string;
  nodeId: string;
  modelId: string;
  repo: string;
  fraction: number;
  label: string;
  stopped: boolean;
}

export function downloadRows(telemetry: Record<string, NodeTelemetry>, nowSeconds: number): DownloadRow[] {
  const rows: DownloadRow[] = [];
  for (const [nodeId, reading] of Object.entries(telemetry)) {
    for (const pull of reading.pulls ?? []) {
      const fraction = pull.total_bytes > 0 ? Math.min(pull.done_bytes / pull.total_bytes, 1) : 0;
      const stopped = nowSeconds - pull.updated_at > STOPPED_AFTER_SECONDS;
      const amount = `${formatBytes(pull.done_bytes)} of ${formatBytes(pull.total_bytes)}`;
      rows.push({
        key: `${nodeId}/${pull.model_id}/${pull.repo}`,
        nodeId,
        modelId: pull.model_id,
        repo: pull.repo,
        fraction,
        label: stopped ? `${amount}, stopped: run the pull again to resume` : amount,
        stopped,
      });
    }
  }
  return rows.sort((a, b) => a.nodeId.localeCompare(b.nodeId) || a.modelId.localeCompare(b.modelId));
}
