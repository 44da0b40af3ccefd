import { mkdirSync, rmSync } from "node:fs";
import type { TestProject } from "vitest/node";
import { ARTIFACTS, startNode, type Membership } from "./node";

declare module "vitest" {
  export interface ProvidedContext {
    skulkUrl: string;
    // How a second node joins the node under test; null when that node was given.
    membership: Membership | null;
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  rmSync(ARTIFACTS, { recursive: true, force: true }); // only this run's screenshots and logs
  mkdirSync(ARTIFACTS, { recursive: true });
  const given = process.env.SKULK_E2E_URL;
  if (given) {
    project.provide("skulkUrl", given.replace(/\/$/, ""));
    project.provide("membership", null);
    return async () => {};
  }
  const node = await startNode();
  project.provide("skulkUrl", node.url);
  project.provide("membership", node.membership);
  return node.stop;
}
