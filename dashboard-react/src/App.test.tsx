// @vitest-environment jsdom
import { fireEvent, render, screen, waitFor } from "@testing-library/react";
import { afterEach, describe, expect, it, vi } from "vitest";
import { App } from "./App";
import { KEY_STORAGE } from "./api/client";
import { clusterState, clusterSummary } from "./test-fixtures";

afterEach(() => vi.unstubAllGlobals());

function node(keys: string[] | null) {
  return vi.fn(async (path: string, init?: RequestInit) => {
    const auth = (init?.headers as Record<string, string> | undefined)?.Authorization;
    if (keys && !keys.some((k) => auth === `Bearer ${k}`)) {
      return new Response(JSON.stringify({ error: { message: "a valid API key is needed" } }), { status: 401 });
    }
    const body = path === "/state" ? clusterState() : path === "/cluster" ? clusterSummary() : {};
    return new Response(JSON.stringify(body), { status: 200 });
  });
}

describe("App", () => {
  it("opens on the cluster view of the node that served it", async () => {
    vi.stubGlobal("fetch", node(null));
    render(<App />);
    await waitFor(() => expect(screen.getByRole("status").textContent).toBe("connected to node-a"));
    expect(screen.getByRole("heading", { level: 2, name: "Cluster" })).toBeTruthy();
    expect(screen.getByRole("link", { name: "Skip to content" })).toBeTruthy();
  });

  it("opened at a view's path, shows that view and moves the path into the hash", async () => {
    vi.stubGlobal("fetch", node(null));
    window.history.replaceState(null, "", "/instances?x=1");
    render(<App />);
    await waitFor(() => expect(screen.getByRole("status").textContent).toBe("connected to node-a"));
    expect(screen.getByRole("heading", { level: 2, name: "Instances" })).toBeTruthy();
    expect(window.location.pathname + window.location.hash).toBe("/#/instances?x=1");
    window.history.replaceState(null, "", "/");
  });

  it("asks for the API key when the node wants one, then sends it", async () => {
    const fetch = node(["secret"]);
    vi.stubGlobal("fetch", fetch);
    render(<App />);
    fireEvent.change(await screen.findByLabelText("API key"), { target: { value: "secret" } });
    fireEvent.click(screen.getByRole("button", { name: "Use key" }));
    expect(localStorage.getItem(KEY_STORAGE)).toBe("secret");
    await waitFor(() => expect(screen.getByRole("status").textContent).toBe("connected to node-a"));
    expect(fetch.mock.calls.some(([, init]) =>
      (init?.headers as Record<string, string>).Authorization === "Bearer secret")).toBe(true);
  });
});
