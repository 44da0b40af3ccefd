import { afterEach } from "vitest";

// Component tests run in jsdom (they say so at their top); pure state tests in plain node.
if (typeof window !== "undefined") {
  const { cleanup } = await import("@testing-library/react");
  afterEach(() => {
    cleanup();
    localStorage.clear();
    window.location.hash = "";
  });
}
