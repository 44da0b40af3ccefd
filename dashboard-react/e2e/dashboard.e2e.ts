// The dashboard against a real node serving the real model: cluster, placement from the
// Models view to ready, a streamed chat and a stopped one, a trace, the events; one
// screenshot per view in e2e-artifacts/.

import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, inject, it, onTestFailed } from "vitest";
import { launch, shoot, waitFor, waitForText } from "./browser";
import { startNode } from "./node";

const MODEL = "smollm2-135m";
const url = inject("skulkUrl");
const membership = inject("membership");

async function api<T>(path: string, init?: RequestInit): Promise<T> {
  const response = await fetch(`${url}${path}`, init);
  if (!response.ok) throw new Error(`${path}: ${response.status} ${await response.text()}`);
  return (await response.json()) as T;
}

interface StateBody {
  tasks: Record<string, unknown>;
  instances: Record<string, unknown>;
}

describe("the dashboard on a real node", () => {
  let browser: Browser;
  let page: Page;
  let nodeId: string;

  beforeAll(async () => {
    nodeId = (await api<{ node_id: string }>("/node_id")).node_id;
    browser = await launch();
    page = await browser.newPage({ viewport: { width: 1280, height: 860 }, reducedMotion: "reduce" });
    page.on("pageerror", (error) => console.error("page error:", error.message));
  });

  afterAll(async () => {
    await browser?.close();
  });

  function shootOnFailure(name: string) {
    onTestFailed(async () => {
      await shoot(page, `failed-${name}`).catch(() => {});
    });
  }

  async function open(view: string) {
    await page.goto(`${url}/#/${view}`);
    await page.getByRole("heading", { level: 2 }).first().waitFor();
  }

  it("shows this node in the cluster view, as master, with its health explained", async () => {
    shootOnFailure("cluster");
    await open("cluster");
    const card = page.locator(`article[data-node="${nodeId}"]`);
    await card.waitFor();
    expect(await card.getByText("master", { exact: true }).count()).toBe(1);
    expect(await card.getByRole("meter", { name: "Memory" }).getAttribute("aria-valuenow")).toMatch(/^\d+$/);
    // Its GPUs from the real probe: a meter each, or, on a machine without one, says so.
    const gpus = await card.getByRole("meter", { name: /^GPU \d+: .+ \((cuda|metal|vulkan|rocm)\)$/ }).count();
    expect(gpus + (await card.getByText("GPUs: none (CPU only)").count())).toBeGreaterThan(0);
    await page.locator(`svg.graph g[data-node="${nodeId}"]`).waitFor();
    // The health badge explains itself on keyboard focus, not only on hover.
    const badge = card.getByTestId("health-badge");
    await badge.focus();
    const tip = card.getByRole("tooltip");
    await tip.waitFor({ state: "visible" });
    expect(await tip.innerText()).toMatch(/Healthy|Fix:/);
    await shoot(page, "cluster");
  });

  it("places the model from the models view, showing candidates, until the instance is ready", async () => {
    shootOnFailure("models");
    await open("models");
    await page.getByRole("button", { name: `Place ${MODEL}` }).click();
    const candidates = page.getByRole("group", { name: "Candidate placements" });
    await candidates.waitFor();
    const whole = candidates.getByRole("radio", { name: /llama_cpp, whole, 1 node/ });
    expect(await whole.isChecked()).toBe(true);
    expect(await candidates.innerText()).toContain(nodeId);
    expect(await candidates.innerText()).toMatch(/layers 0–29/);
    await shoot(page, "models-candidates");
    await page.getByRole("button", { name: "Confirm placement" }).click();
    const status = page.locator(".placed [role=status]");
    await waitForText(status, /ready/, 120_000);
    const bars = page.locator(".placed").getByRole("progressbar");
    expect(await bars.count()).toBe(1);
    expect(await bars.first().getAttribute("aria-valuenow")).toBe("100");
    await shoot(page, "models");
  });

  it("lists the instance with its rank, layers, engine and requests", async () => {
    shootOnFailure("instances");
    await open("instances");
    const card = page.locator("article.instance-card");
    await card.first().waitFor();
    const text = await card.first().innerText();
    expect(text).toContain(MODEL);
    expect(text).toContain("llama_cpp");
    expect(text).toMatch(/layers 0–29/);
    expect(text).toMatch(/Drafter\s*none/);
    await shoot(page, "instances");
  });

  it("switches tracing on from the traces view", async () => {
    shootOnFailure("tracing");
    await open("traces");
    const toggle = page.getByRole("checkbox", { name: "Trace requests on this node" });
    await waitFor("the tracing toggle", async () => !(await toggle.isDisabled()));
    if (!(await toggle.isChecked())) await toggle.check();
    await waitFor("tracing on", async () => (await api<{ enabled: boolean }>("/v1/tracing")).enabled);
  });

  it("streams a chat reply with its TTFT and speed, and shows the raw exchange", async () => {
    shootOnFailure("chat");
    await open("chat");
    await waitFor("the model list", async () => (await page.locator("#chat-model option").count()) > 0);
    await page.getByLabel("Model").selectOption(MODEL);
    await page.getByLabel("Max tokens").fill("24");
    await page.getByLabel("Message").fill("Say hello in one short sentence.");
    await page.keyboard.press("Enter");
    const reply = page.locator(".turn-assistant").last();
    await waitFor("the reply to finish", async () => (await reply.getAttribute("data-state")) === "done", 120_000);
    expect((await reply.locator(".content").innerText()).trim().length).toBeGreaterThan(0);
    const metrics = await reply.getByTestId("reply-metrics").innerText();
    expect(metrics).toMatch(/TTFT \d/);
    expect(metrics).toMatch(/tok\/s/);
    await reply.getByText("Raw request and response").click();
    expect(await reply.locator(".raw").innerText()).toContain('"stream": true');
    expect(await reply.locator(".raw").innerText()).toContain('"temperature": 1');
    await shoot(page, "chat");
  });

  it("stops a long generation, and the node drops the request", async () => {
    shootOnFailure("chat-stop");
    // Greedy, in a new conversation: this prompt's reply then runs the whole 4000 tokens
    // (about 60 s here). Sampled, it sometimes ends within a second, before Stop is pressed.
    await page.getByRole("button", { name: "New conversation" }).click();
    await page.getByLabel("Max tokens").fill("4000");
    await page.getByLabel("Temperature").fill("0");
    await page.getByLabel("Message").fill("Write a very long story about a fox who travels the world.");
    await page.getByRole("button", { name: "Send" }).click();
    const reply = page.locator(".turn-assistant").last();
    await waitFor("the first tokens", async () => (await reply.locator(".content").innerText()).length > 3, 120_000);
    await page.getByRole("button", { name: "Stop" }).click();
    await waitFor("the reply to stop", async () => (await reply.getAttribute("data-state")) === "stopped", 15_000);
    expect(await reply.getByTestId("reply-metrics").innerText()).toMatch(/stopped/);
    const tokens = Number(/(\d+) tokens/.exec(await reply.getByTestId("reply-metrics").innerText())?.[1]);
    expect(tokens).toBeLessThan(4000);
    await waitFor("no task left on the node", async () =>
      Object.keys((await api<StateBody>("/state")).tasks).length === 0, 15_000);
    await page.getByRole("button", { name: "Send" }).waitFor();
    await shoot(page, "chat-stopped");
  });

  it("opens a trace as a waterfall across the API and the rank", async () => {
    shootOnFailure("traces");
    await open("traces");
    const openButtons = page.getByRole("button", { name: /^Open trace / });
    await waitFor("the traces", async () => (await openButtons.count()) >= 1, 15_000);
    await openButtons.last().click(); // the oldest: the finished chat reply
    const lanes = page.locator(".wf-lane .wf-label");
    await waitFor("the waterfall", async () => (await lanes.count()) >= 2, 15_000);
    const labels = await lanes.allInnerTexts();
    expect(labels.some((l) => l.endsWith(" api"))).toBe(true);
    expect(labels.some((l) => /rank 0$/.test(l))).toBe(true);
    const bar = page.locator(".wf-bar").first();
    expect(await bar.getAttribute("aria-label")).toMatch(/starts at .* lasts /);
    await shoot(page, "traces");
  });

  it("shows the recent events live and filters them by type", async () => {
    shootOnFailure("events");
    await open("events");
    const rows = page.locator("table.events tbody tr");
    await waitFor("the events", async () => (await rows.count()) > 3, 15_000);
    const kinds = new Set(await page.locator("table.events tbody tr").evaluateAll(
      (trs) => trs.map((tr) => tr.getAttribute("data-kind"))));
    expect(kinds).toContain("InstanceCreated");
    expect(kinds).toContain("TaskCreated");
    await page.getByRole("button", { name: "TaskCreated", exact: true }).click();
    await waitFor("the filter", async () => {
      const shown = await rows.evaluateAll((trs) => trs.map((tr) => tr.getAttribute("data-kind")));
      return shown.length > 0 && shown.every((k) => k === "TaskCreated");
    });
    await shoot(page, "events");
  });

  it("can be used with the keyboard, in dark theme and at phone width", async () => {
    shootOnFailure("layout");
    await open("cluster");
    await page.getByRole("link", { name: "Instances" }).focus();
    await page.keyboard.press("Enter");
    await waitFor("the instances view", async () => page.url().endsWith("#/instances"));
    await page.getByRole("button", { name: /^Theme: / }).click(); // system -> light
    await page.getByRole("button", { name: /^Theme: / }).click(); // light -> dark
    expect(await page.evaluate(() => document.documentElement.dataset.theme)).toBe("dark");
    await page.setViewportSize({ width: 390, height: 844 });
    await open("cluster");
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    expect(overflow).toBeLessThanOrEqual(1);
    await shoot(page, "cluster-phone-dark");
    await page.getByRole("button", { name: /^Theme: / }).click(); // dark -> system
    await page.setViewportSize({ width: 1280, height: 860 });
  });

  it.skipIf(membership === null)("shows a node joining and then leaving, live", async () => {
    shootOnFailure("join-leave");
    await open("cluster");
    const second = await startNode(membership!, "second-node.log");
    try {
      const secondId = (await (await fetch(`${second.url}/node_id`)).json() as { node_id: string }).node_id;
      const card = page.locator(`article[data-node="${secondId}"]`);
      await card.waitFor({ timeout: 60_000 });
      await page.locator(`svg.graph g[data-node="${secondId}"]`).waitFor();
      await waitFor("two nodes alive", async () =>
        /2 of 2 nodes alive/.test(await page.getByRole("list", { name: "Cluster summary" }).innerText()), 30_000);
      await waitFor("the link between them", async () => (await page.locator("svg.graph .link").count()) === 1, 30_000);
      await shoot(page, "cluster-two-nodes");
      await second.stop();
      // Gone from membership at once; its card goes when its readings expire.
      await waitFor("the node to leave", async () =>
        (await card.count()) === 0 || (await card.innerText()).includes("gone"), 30_000);
      expect(await page.getByRole("list", { name: "Cluster summary" }).innerText()).toMatch(/1 of \d nodes alive/);
    } finally {
      await second.stop();
    }
  });

  it("deletes the instance from the instances view", async () => {
    shootOnFailure("delete");
    await open("instances");
    const card = page.locator("article.instance-card").first();
    await card.waitFor();
    await card.getByRole("button", { name: /^Delete instance / }).click();
    await card.getByRole("button", { name: /^Confirm: delete instance / }).click();
    await waitFor("the instance to go", async () =>
      Object.keys((await api<StateBody>("/state")).instances).length === 0, 40_000);
    await waitFor("the card to go", async () => (await page.locator("article.instance-card").count()) === 0);
  });
});
