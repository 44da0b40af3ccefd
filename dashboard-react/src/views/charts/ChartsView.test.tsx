// @vitest-environment jsdom
import { act, fireEvent, render, screen, within } from "@testing-library/react";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { ClusterHistory, NodeHistory } from "../../api/history";

// uPlot draws on a canvas jsdom does not have; the real one draws in the end-to-end test
// (e2e/charts.e2e.ts). Here a stand-in records what each chart was given and, as uPlot
// does, runs the draw hooks (which place the markers) after each new data.
const drawn: { data: unknown; destroyed: boolean }[] = [];
vi.mock("uplot", () => ({
  default: class {
    over = document.createElement("div");
    scales = { x: { min: 100, max: 200 } };
    record: { data: unknown; destroyed: boolean };
    draw: ((plot: unknown) => void)[];
    constructor(options: { hooks: { draw: ((plot: unknown) => void)[] } }, data: unknown, host: HTMLElement) {
      this.record = { data, destroyed: false };
      this.draw = options.hooks.draw;
      drawn.push(this.record);
      host.appendChild(this.over);
      this.draw.forEach((hook) => hook(this));
    }
    setData(data: unknown) {
      this.record.data = data;
      this.draw.forEach((hook) => hook(this));
    }
    setSize() {}
    valToPos(value: number) { return value - 100; }
    destroy() { this.record.destroyed = true; }
  },
}));
globalThis.ResizeObserver ??= class { observe() {} disconnect() {} unobserve() {} } as unknown as typeof ResizeObserver;

const { ChartsView } = await import("./ChartsView");

function history(): ClusterHistory {
  return {
    node_id: "node-a", interval_seconds: 5, window_seconds: 3600, since: 0,
    cluster: { t: [150, 155], decode_tokens_per_second: [10, 20], ttft_p95_seconds: [0.2, null] },
    instances: [{ instance_id: "inst-1", model_id: "smollm2-135m",
      series: { t: [150, 155], decode_tokens_per_second: [10, 20], queue_depth: [1, 0] } }],
    nodes: [
      { node_id: "node-a", latest: { t: [155], decode_tokens_per_second: [5], cpu_percent: [40] }, runner_restarts: 0 },
      { node_id: "node-b", latest: { t: [155], decode_tokens_per_second: [15], cpu_percent: [90] }, runner_restarts: 1 },
    ],
    markers: [{ at: 152, kind: "failover", text: "runner run-1 failed: killed", node_id: null, instance_id: "inst-1" }],
    errors: { "node-c": "no signed answer within 5 s" },
  };
}

function nodeHistory(): NodeHistory {
  return { node_id: "node-b", series: { t: [150, 155], cpu_percent: [80, 90] }, markers: [] };
}

beforeEach(() => {
  drawn.length = 0;
  vi.stubGlobal("fetch", vi.fn(async (path: string) =>
    new Response(JSON.stringify(path.startsWith("/v1/history/nodes/") ? nodeHistory() : history()))));
});

afterEach(() => vi.unstubAllGlobals());

describe("ChartsView", () => {
  it("draws the cluster's charts with markers, the instances and the busiest node first", async () => {
    render(<ChartsView />);
    await screen.findByRole("heading", { name: "Cluster" });
    const tokens = document.querySelector('[data-chart="tokens"]')!;
    expect(tokens.getAttribute("data-points")).toBe("2");
    expect(drawn[0]!.data).toEqual([[150, 155], [10, 20]]);
    const failover = tokens.querySelector('.chart-marker[data-kind="failover"]')!;
    expect(failover.getAttribute("aria-label")).toContain("runner run-1 failed: killed");
    expect((failover as HTMLElement).style.left).toBe("52px");
    expect(screen.getByRole("list", { name: "Markers" }).textContent).toContain("Failover");
    expect(screen.getByRole("region", { name: "Charts of instance inst-1" })).toBeTruthy();
    expect(screen.getByText(/1 did not answer: node-c/)).toBeTruthy();
    const rows = screen.getAllByRole("row").filter((r) => r.getAttribute("data-node"));
    expect(rows.map((r) => r.getAttribute("data-node"))).toEqual(["node-b", "node-a"]);
  });

  it("opens one node's charts from the table, and closes them", async () => {
    render(<ChartsView />);
    const button = await screen.findByRole("button", { name: "node-b" });
    fireEvent.click(button);
    const charts = await screen.findByRole("region", { name: "Charts of node node-b" });
    await within(charts).findByText("CPU");
    expect(charts.querySelector('[data-chart="cpu"]')!.getAttribute("data-points")).toBe("2");
    expect(vi.mocked(fetch).mock.calls.some(([path]) => path === "/v1/history/nodes/node-b")).toBe(true);
    await act(async () => fireEvent.click(screen.getByRole("button", { name: "node-b" })));
    expect(screen.queryByRole("region", { name: "Charts of node node-b" })).toBeNull();
  });
});
