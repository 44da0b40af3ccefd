// Real `skulk run` nodes for the end-to-end tests: free ports, a fresh data dir each, their
// logs kept beside the screenshots.

import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { createWriteStream, mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

export const ARTIFACTS = resolve(import.meta.dirname, "..", "e2e-artifacts");
const DEFAULT_SKULK = resolve(import.meta.dirname, "..", "..", ".venv", "bin", "skulk");

export function freePort(): Promise<number> {
  return new Promise((done, fail) => {
    const server = createServer();
    server.once("error", fail);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => (typeof address === "object" && address ? done(address.port) : fail(new Error("no port"))));
    });
  });
}

async function waitHealthy(url: string, child: ChildProcess, log: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`skulk exited with ${child.exitCode}; see ${log}`);
    try {
      if ((await fetch(`${url}/healthz`)).ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`skulk did not answer /healthz within ${timeoutMs} ms; see ${log}`);
}

/** How another node joins a node's cluster. */
export interface Membership {
  namespace: string;
  peer: string;
  /** The join token of the cluster the first node made. */
  token: string;
}

export interface RunningNode {
  url: string;
  membership: Membership;
  stop(): Promise<void>;
}

/** A node on free ports; given a membership, it joins that cluster. */
export async function startNode(member?: Membership, logName = "node.log"): Promise<RunningNode> {
  const skulk = process.env.SKULK_BIN ?? DEFAULT_SKULK;
  const [apiPort, transportPort] = [await freePort(), await freePort()];
  const namespace = member?.namespace ?? `e2e-${apiPort}`;
  const dataDir = mkdtempSync(join(tmpdir(), "skulk-e2e-"));
  const logPath = join(ARTIFACTS, logName);
  const log = createWriteStream(logPath);
  const args = ["run", "--api-port", String(apiPort), "--data-dir", dataDir,
    "--listen", `tcp/127.0.0.1:${transportPort}`, "--no-discover", "--namespace", namespace,
    "--admit-port", "0", ...(member ? ["--join", member.token, "--peer", member.peer] : [])];
  const child = spawn(skulk, args, { stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, PYTHONUNBUFFERED: "1" } });
  child.stdout!.pipe(log);
  child.stderr!.pipe(log);
  const url = `http://127.0.0.1:${apiPort}`;
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((r) => child.once("exit", r));
      child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), 20_000);
      await exited;
      clearTimeout(timer);
    }
    rmSync(dataDir, { recursive: true, force: true });
  };
  try {
    await waitHealthy(url, child, logPath, 60_000);
  } catch (error) {
    await stop();
    throw error;
  }
  // The first node made the cluster: its token admits the second one.
  const token = member?.token ??
    execFileSync(skulk, ["cluster", "token", "--data-dir", dataDir], { encoding: "utf8" }).trim();
  return { url, membership: { namespace, peer: `tcp/127.0.0.1:${transportPort}`, token }, stop };
}
