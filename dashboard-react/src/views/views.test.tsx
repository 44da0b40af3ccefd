// @vitest-environment jsdom
import { fireEvent, render, screen, within } from "@testing-library/react";
import type { ReactNode } from "react";
import { describe, expect, it, vi } from "vitest";
import { ClusterDataContext, type ClusterData } from "../hooks/ClusterData";
import { catalogueRows } from "../state/models";
import { waterfall } from "../state/traces";
import { clusterState, clusterSummary, instanceView, placementFits, task } from "../test-fixtures";
import { ClusterView } from "./cluster/ClusterView";
import { InstancesView } from "./instances/InstancesView";
import { CandidateList } from "./models/CandidateList";
import { CatalogueTable } from "./models/CatalogueTable";
import { Downloads } from "./models/Downloads";
import { Waterfall } from "./traces/Waterfall";

function withData(data: Partial<ClusterData>, children: ReactNode) {
  const value: ClusterData = { state: null, cluster: null, error: null, refresh: () => {}, ...data };
  return <ClusterDataContext.Provider value={value}>{children}</ClusterDataContext.Provider>;
}

describe("ClusterView", () => {
  it("draws every node with master, health and usage bars", () => {
    render(withData({ state: clusterState(), cluster: clusterSummary() }, <ClusterView />));
    expect(screen.getByRole("img", { name: /2 nodes, 0 links; master node-a/ })).toBeTruthy();
    const a = screen.getByRole("article", { name: "node-a" });
    expect(within(a).getByText("master")).toBeTruthy();
    expect(within(a).getByRole("meter", { name: "Disk" }).getAttribute("aria-valuenow")).toBe("50");
    expect(screen.getByRole("list", { name: "Cluster summary" }).textContent).toContain("2 of 2 nodes alive");
  });

  it("shows each GPU with its name, backend and VRAM in use, and a CPU-only node as such", () => {
    const state = clusterState();
    state.telemetry["node-a"]!.gpus = [
      { name: "NVIDIA H200", backend: "cuda", vram_total_bytes: 4 * 2 ** 30, vram_free_bytes: 3 * 2 ** 30 },
    ];
    state.telemetry["node-b"]!.gpus = [];
    render(withData({ state, cluster: clusterSummary() }, <ClusterView />));
    const a = screen.getByRole("article", { name: "node-a" });
    const gpu = within(a).getByRole("meter", { name: "GPU 0: NVIDIA H200 (cuda)" });
    expect(gpu.getAttribute("aria-valuenow")).toBe("25");
    expect(gpu.getAttribute("aria-valuetext")).toContain("1.00 GiB of 4.00 GiB used");
    const b = screen.getByRole("article", { name: "node-b" });
    expect(within(b).getByText("GPUs: none (CPU only)")).toBeTruthy();
    expect(within(b).queryByRole("meter", { name: /^GPU/ })).toBeNull();
  });

  it("shows each node's host name beside its id, when the node reports one", () => {
    render(withData({ state: clusterState(), cluster: clusterSummary() }, <ClusterView />));
    const b = screen.getByRole("article", { name: "node-b" });
    expect(within(b).getByTitle("host name").textContent).toBe("studio.local");
    expect(within(screen.getByRole("article", { name: "node-a" })).queryByTitle("host name")).toBeNull();
  });

  it("warns when the cluster is insecure, and only then", () => {
    const { unmount } = render(withData({ state: clusterState(), cluster: clusterSummary() }, <ClusterView />));
    expect(screen.queryByRole("alert")).toBeNull();
    unmount();
    const insecure = { ...clusterSummary(), security: "insecure" as const };
    render(withData({ state: clusterState(), cluster: insecure }, <ClusterView />));
    expect(screen.getByRole("alert").textContent).toContain("Insecure cluster");
  });

  it("says it is reading until the first answer, and shows a failure", () => {
    render(withData({ error: new Error("connection refused") }, <ClusterView />));
    expect(screen.getByRole("alert").textContent).toContain("connection refused");
  });
});

describe("InstancesView", () => {
  it("shows ranks, drafter and the requests in flight on each instance", () => {
    const state = clusterState();
    state.tasks = { t: task({ command_id: "cmd-live" }) };
    const cluster = { ...clusterSummary(), instances: [instanceView()] };
    render(withData({ state, cluster }, <InstancesView />));
    const card = screen.getByRole("article", { name: /smollm2-135m/ });
    expect(within(card).getAllByRole("row")).toHaveLength(3);
    expect(within(card).getByText("none")).toBeTruthy();
    expect(within(card).getByText("cmd-live")).toBeTruthy();
    expect(screen.getByText(/requests in flight/).textContent).toContain("1");
  });
});

describe("Models", () => {
  it("lists sizes, where the weights are and per-node verdicts, and asks to place a model", () => {
    const place = vi.fn();
    const rows = catalogueRows([
      { id: "smollm2-135m", aliases: [], context_length: 8192, available_formats: ["gguf"],
        running_instances: 0, status: "held", held_by: ["node-a"] },
      { id: "qwen3-8b", aliases: [], context_length: 8192, available_formats: [],
        running_instances: 0, status: "download", held_by: [] },
    ], placementFits());
    render(<CatalogueTable rows={rows} onPlace={place} />);
    expect(screen.getByText("93.8 MiB")).toBeTruthy();
    expect(screen.getByText(/runs no worker; weights copied from node-a/)).toBeTruthy();
    expect(screen.getByText(/fits with llama_cpp; weights on its disk/)).toBeTruthy();
    const held = screen.getByRole("row", { name: /smollm2-135m/ });
    expect(within(held).getByText("on disk: node-a")).toBeTruthy();
    const missing = screen.getByRole("row", { name: /qwen3-8b/ });
    expect(within(missing).getByText("needs a download")).toBeTruthy();
    fireEvent.click(screen.getByRole("button", { name: "Place smollm2-135m" }));
    expect(place).toHaveBeenCalledWith("smollm2-135m");
  });

  it("offers fitting candidates and greys out the impossible ones with their reason", () => {
    const select = vi.fn();
    render(<CandidateList selected={null} onSelect={select} previews={[
      { engine: "mlx", sharding: "pipeline", width: 2, fits: true, reason: null,
        predicted_decode_tps: 3.14159, prediction_assumes: ["gigabit links"],
        placed_by_default: true, nodes: [
        { node_id: "node-a", rank: 0, start_layer: 0, end_layer: 17, needed_bytes: 2 ** 30, usable_bytes: 2 ** 33, fits: true },
        { node_id: "node-b", rank: 1, start_layer: 17, end_layer: 30, needed_bytes: 2 ** 30, usable_bytes: 2 ** 32, fits: true }] },
      { engine: "mlx", sharding: "tensor", width: 2, fits: false, reason: "heads do not divide by 2", nodes: [] },
    ]} />);
    const radios = screen.getAllByRole("radio");
    expect(radios.map((r) => (r as HTMLInputElement).disabled)).toEqual([false, true]);
    expect(screen.getByText(/heads do not divide by 2/)).toBeTruthy();
    expect(screen.getByText("layers 17–29")).toBeTruthy();
    const predicted = screen.getByText(/~3\.14 tokens\/s predicted/);
    expect(predicted.getAttribute("title")).toMatch(/assumed gigabit links/);
    expect(screen.getAllByText(/what placing it with the defaults takes/)).toHaveLength(1);
    fireEvent.click(radios[0]!);
    expect(select).toHaveBeenCalledWith("mlx/pipeline/2");
  });
});

describe("Waterfall", () => {
  it("draws a lane per process with each span labelled for screen readers", () => {
    render(<Waterfall chart={waterfall({ traceEvents: [
      { name: "process_name", ph: "M", pid: 1, tid: 0, args: { name: "node-a api" } },
      { name: "api.stream", ph: "X", pid: 1, tid: 0, ts: 0, dur: 2000, args: { node_id: "node-a", rank: 0 } },
      { name: "runner.decode", ph: "X", pid: 2, tid: 0, ts: 500, dur: 1500, args: { node_id: "node-b", rank: 1 } },
    ] })} />);
    expect(screen.getByRole("list", { name: "Spans of node-a api" })).toBeTruthy();
    expect(screen.getByRole("listitem", { name: "runner.decode: starts at 500 µs, lasts 1.5 ms" })).toBeTruthy();
  });
});

describe("Downloads", () => {
  it("draws one progress bar per pull on any node, and nothing when none is under way", () => {
    const state = clusterState();
    const { unmount } = render(withData({ state }, <Downloads nowSeconds={1000} />));
    expect(screen.queryByRole("heading", { name: "Downloads" })).toBeNull();
    unmount();
    state.telemetry["node-b"] = { ...state.telemetry["node-b"]!, pulls: [{
      model_id: "qwen2.5-0.5b-instruct", repo: "Qwen/Qwen2.5-0.5B-Instruct-GGUF",
      done_bytes: 100 << 20, total_bytes: 400 << 20, updated_at: 999 }] };
    render(withData({ state }, <Downloads nowSeconds={1000} />));
    const bar = screen.getByRole("progressbar",
      { name: "qwen2.5-0.5b-instruct from Qwen/Qwen2.5-0.5B-Instruct-GGUF on node-b" });
    expect(bar.getAttribute("aria-valuenow")).toBe("25");
    expect(bar.getAttribute("aria-valuetext")).toContain("100 MiB of 400 MiB");
  });
});
