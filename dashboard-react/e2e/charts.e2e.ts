// The Charts view against a real node of its own: real requests draw points on the
// cluster's and the instance's charts, and killing the instance's runner puts a failover
// marker on them; hovering a chart shows its values. Screenshots: e2e-artifacts/charts.png
// (the whole view) and charts-top.png (its top, as in the README).

import { join } from "node:path";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it, onTestFailed } from "vitest";
import { launch, shoot, waitFor } from "./browser";
import { ARTIFACTS, startNode, type RunningNode } from "./node";

const MODEL = "smollm2-135m";

describe("the charts on a real node", () => {
  let node: RunningNode;
  let browser: Browser;
  let page: Page;

  async function api<T>(path: string, init?: RequestInit): Promise<T> {
    const response = await fetch(`${node.url}${path}`, init);
    if (!response.ok) throw new Error(`${path}: ${response.status} ${await response.text()}`);
    return (await response.json()) as T;
  }

  beforeAll(async () => {
    node = await startNode(undefined, "charts-node.log");
    browser = await launch();
    page = await browser.newPage({ viewport: { width: 1280, height: 1000 }, reducedMotion: "reduce" });
    page.on("pageerror", (error) => console.error("page error:", error.message));
  });

  afterAll(async () => {
    await browser?.close();
    await node?.stop();
  });

  it("draws real requests and marks a killed runner's failover", async () => {
    onTestFailed(async () => {
      await shoot(page, "failed-charts").catch(() => {});
    });
    const placed = await api<{ instance_id: string }>("/place_instance", {
      method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ model_id: MODEL }) });
    await waitFor("the instance to be ready", async () =>
      (await api<{ status: string }>(`/instance/${placed.instance_id}`)).status === "ready", 120_000);
    for (let i = 0; i < 3; i += 1) {
      await api("/v1/chat/completions", {
        method: "POST", headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ model: MODEL, max_tokens: 8, messages: [{ role: "user", content: "Hi" }] }) });
    }

    await page.goto(`${node.url}/#/charts`);
    await page.getByRole("heading", { name: "Charts", level: 2 }).waitFor();
    const tokens = page.locator('[data-chart="tokens"]').first();
    await tokens.locator("canvas").waitFor();
    await waitFor("a sample with the requests' tokens", async () => {
      const history = await api<{ cluster: { decode_tokens_per_second: number[] } }>("/v1/history");
      return history.cluster.decode_tokens_per_second.some((v) => v > 0);
    }, 60_000);
    await waitFor("points on the charts", async () => Number(await tokens.getAttribute("data-points")) >= 2, 60_000);
    const instanceCharts = page.locator(`[data-instance-charts="${placed.instance_id}"]`);
    await instanceCharts.waitFor({ timeout: 30_000 });
    await waitFor("the placement marker", async () =>
      (await tokens.locator(".chart-marker[data-kind=placement]").count()) > 0, 30_000);

    const diagnostics = await api<{ runners: { pid: number | null }[] }>("/v1/diagnostics/node");
    const [runner] = diagnostics.runners;
    expect(runner?.pid).toBeTypeOf("number");
    process.kill(runner!.pid!, "SIGKILL");

    const failover = tokens.locator(".chart-marker[data-kind=failover]");
    await waitFor("a failover marker on the chart", async () => (await failover.count()) > 0, 60_000);
    expect(await failover.first().getAttribute("aria-label")).toMatch(/^Failover at .*runner .* failed/);
    expect(await instanceCharts.locator(".chart-marker[data-kind=failover]").count()).toBeGreaterThan(0);
    expect(await page.getByRole("list", { name: "Markers" }).innerText()).toContain("Failover");

    // Hovering a chart shows the values under the cursor in its legend. The slot under the
    // cursor may hold no sample (a gap shows "–"), and a new sample every 5 s redraws the
    // chart, so the cursor sweeps from the newest slot leftwards until it finds a value.
    const plot = tokens.locator(".u-over");
    let step = 0;
    await waitFor("the hovered values", async () => {
      const box = (await plot.boundingBox())!;
      const x = box.x + box.width * Math.max(0.02, 1 - 0.05 * (step % 20)) - 2;
      step += 1;
      await page.mouse.move(x, box.y + box.height / 2);
      return /tok\/s/.test(await tokens.locator(".u-legend").innerText());
    }, 30_000);

    // The node table leads to the node's own charts.
    await page.locator("table.node-table tbody button").first().click();
    await page.locator("[data-node-charts] [data-chart=cpu] canvas").waitFor();
    await shoot(page, "charts");
    // The top of the view, as the README shows it.
    await page.evaluate(() => window.scrollTo(0, 0));
    await page.screenshot({ path: join(ARTIFACTS, "charts-top.png") });
  });
});
