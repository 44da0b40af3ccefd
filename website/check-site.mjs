// The built site in headless Chromium (Debian's, through the dashboard's playwright-core):
// the home page and two reference pages render their content with no console errors, and
// screenshots of the home and benchmarks pages go to docs/screenshots/.
//
//   node website/check-site.mjs [SITE_DIR] [SCREENSHOT_DIR]

import { createServer } from "node:http";
import { readFile, stat } from "node:fs/promises";
import { createRequire } from "node:module";
import { extname, join, resolve } from "node:path";

const require = createRequire(new URL("../dashboard-react/package.json", import.meta.url));
const { chromium } = require("playwright-core");

const site = resolve(process.argv[2] ?? "build/website");
const screenshots = resolve(process.argv[3] ?? "docs/screenshots");
const TYPES = { ".html": "text/html", ".css": "text/css", ".js": "text/javascript",
  ".svg": "image/svg+xml", ".png": "image/png", ".json": "application/json" };

// The site as a web server serves it (search and its worker need http, not file:).
function serve() {
  const server = createServer(async (request, response) => {
    let path = join(site, decodeURIComponent(new URL(request.url, "http://x").pathname));
    try {
      if ((await stat(path)).isDirectory()) path = join(path, "index.html");
      const body = await readFile(path);
      response.writeHead(200, { "content-type": TYPES[extname(path)] ?? "application/octet-stream" });
      response.end(body);
    } catch {
      response.writeHead(404).end("not found");
    }
  });
  return new Promise((done) => server.listen(0, "127.0.0.1", () => done(server)));
}

function check(condition, message) {
  if (!condition) throw new Error(message);
}

const server = await serve();
const base = `http://127.0.0.1:${server.address().port}`;
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM_PATH ?? "/usr/bin/chromium", headless: true,
  args: ["--no-sandbox"] });
const failures = [];
try {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  const problems = [];
  page.on("console", (message) => { if (message.type() === "error") problems.push(message.text()); });
  page.on("pageerror", (error) => problems.push(error.message));
  page.on("response", (response) => {
    if (response.status() >= 400) problems.push(`${response.status()} ${response.url()}`);
  });

  async function open(path, what) {
    problems.length = 0;
    const response = await page.goto(base + path, { waitUntil: "networkidle", timeout: 30_000 });
    check(response?.ok(), `${path}: HTTP ${response?.status()}`);
    const text = await page.locator("article").innerText();
    await what(text);
    check(problems.length === 0, `${path}: console errors or failed loads: ${problems.join("; ")}`);
    console.log(`ok  ${path}`);
  }

  await open("/", async (text) => {
    check(text.includes("joins the machines you already own"), "home: no introduction");
    check(await page.locator("nav").getByText("Getting started").count() > 0, "home: no nav");
    await page.screenshot({ path: join(screenshots, "website-home.png") });
  });
  await open("/reference/http-api/", async (text) => {
    const routes = page.locator("article table").first().locator("tbody tr");
    check(await routes.count() >= 40, `http api: ${await routes.count()} routes in the table`);
    check(text.includes("POST /v1/chat/completions"), "http api: no chat completions section");
    check(text.includes("max_completion_tokens"), "http api: no body fields");
  });
  await open("/reference/cli/", async (text) => {
    check(text.includes("skulk run"), "cli: no skulk run");
    check(text.includes("--api-port") && text.includes("skulk service"), "cli: flags missing");
  });
  await open("/benchmarks/", async () => {
    const charts = page.locator("article img[src$='.svg']");
    check(await charts.count() >= 5, `benchmarks: ${await charts.count()} charts`);
    for (const chart of await charts.all()) {
      check(await chart.evaluate((img) => img.complete && img.naturalWidth > 0),
        `benchmarks: a chart did not load: ${await chart.getAttribute("src")}`);
    }
    await page.screenshot({ path: join(screenshots, "website-benchmarks.png"), fullPage: true });
  });
} catch (error) {
  failures.push(error.message);
} finally {
  await browser.close();
  server.close();
}
if (failures.length) {
  console.error(`site check failed: ${failures.join("\n")}`);
  process.exit(1);
}
