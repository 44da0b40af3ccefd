import { defineConfig } from "vitest/config";

// End-to-end: a real `skulk run` node (started by e2e/global-setup.ts unless SKULK_E2E_URL
// names one) serving the built dashboard, driven by Debian's Chromium through playwright-core.
export default defineConfig({
  test: {
    environment: "node",
    include: ["e2e/**/*.e2e.ts"],
    globalSetup: ["e2e/global-setup.ts"],
    fileParallelism: false,
    testTimeout: 180_000,
    hookTimeout: 120_000,
  },
});
