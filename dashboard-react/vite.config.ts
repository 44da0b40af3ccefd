import react from "@vitejs/plugin-react";
import { defineConfig } from "vite";

// The API paths a dev server (`npm run dev`) forwards to a running node.
const API_PREFIXES = ["/state", "/cluster", "/events", "/placement", "/place_instance",
  "/instance", "/v1", "/node_id", "/healthz"];
const node = process.env.SKULK_URL ?? "http://127.0.0.1:52415";

export default defineConfig({
  plugins: [react()],
  base: "/",
  build: {
    // Package data of the Python package: every node serves it at `/`.
    outDir: "../src/skulk/api/dashboard_dist",
    emptyOutDir: true,
    assetsDir: "assets",
  },
  server: {
    proxy: Object.fromEntries(API_PREFIXES.map((prefix) => [prefix, node])),
  },
});
