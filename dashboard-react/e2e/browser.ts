// Debian's Chromium, headless, through playwright-core; and small waiting helpers, since
// playwright-core has no auto-waiting `expect`.

import { join } from "node:path";
import { chromium, type Browser, type Locator, type Page } from "playwright-core";
import { ARTIFACTS } from "./node";

export const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";

export function launch(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, headless: true, args: ["--no-sandbox"] });
}

export async function shoot(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: true });
}

/** Waits until `locator`'s text matches `pattern`; returns the text. */
export async function waitForText(locator: Locator, pattern: RegExp, timeoutMs = 15_000): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  let last = "";
  while (Date.now() < deadline) {
    last = (await locator.count()) > 0 ? await locator.first().innerText() : "";
    if (pattern.test(last)) return last;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${pattern}; last text: ${JSON.stringify(last)}`);
}

export async function waitFor<T>(what: string, probe: () => Promise<T | null | undefined | false>, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const value = await probe();
    if (value) return value;
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
}
