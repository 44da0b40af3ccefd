import { describe, expect, it } from "vitest";
import type { NodeTelemetry, StorePull } from "../api/types";
import { downloadRows } from "./downloads";

function reading(nodeId: string, pulls: StorePull[]): NodeTelemetry {
  return {
    node_id: nodeId, stamp: 0, memory_total_bytes: 1, memory_available_bytes: 1, cpu_count: 1,
    backends: [], has_worker: true, api_url: null, disk_total_bytes: 1, disk_free_bytes: 1, warm: [], pulls,
  };
}

describe("downloads", () => {
  it("lists every node's pulls with their share done, and marks one that stopped moving", () => {
    const rows = downloadRows({
      "node-b": reading("node-b", [{ model_id: "qwen", repo: "Qwen/Q-GGUF", done_bytes: 2 ** 30,
        total_bytes: 4 * 2 ** 30, updated_at: 995 }]),
      "node-a": reading("node-a", [{ model_id: "llama", repo: "m/L", done_bytes: 3 << 20,
        total_bytes: 4 << 20, updated_at: 900 }]),
    }, 1000);
    expect(rows.map((r) => [r.nodeId, r.modelId, r.fraction, r.stopped])).toEqual([
      ["node-a", "llama", 0.75, true], ["node-b", "qwen", 0.25, false]]);
    expect(rows[0]!.label).toBe("3.00 MiB of 4.00 MiB, stopped: run the pull again to resume");
    expect(rows[1]!.label).toBe("1.00 GiB of 4.00 GiB");
  });

  it("reads nothing from nodes whose readings carry no pulls", () => {
    const old = reading("node-a", []);
    delete old.pulls;
    expect(downloadRows({ "node-a": old }, 0)).toEqual([]);
  });
});
