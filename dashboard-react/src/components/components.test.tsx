// @vitest-environment jsdom
import { fireEvent, render, screen } from "@testing-library/react";
import { describe, expect, it, vi } from "vitest";
import { KEY_STORAGE } from "../api/client";
import { HealthBadge } from "./HealthBadge";
import { KeyPrompt } from "./KeyPrompt";
import { Meter } from "./Meter";
import { Nav } from "./Nav";
import { RankProgressList } from "./RankProgressList";
import { instanceView } from "../test-fixtures";

describe("HealthBadge", () => {
  it("describes each problem and its fix in a tooltip tied to the badge", () => {
    render(<HealthBadge level="error" reasons={[
      { code: "disk_full", level: "error", message: "only 0.4 GiB disk left", remedy: "free space on the data volume" },
      { code: "stale_telemetry", level: "warn", message: "last readings 9 s old", remedy: "check the node's load" },
    ]} />);
    const badge = screen.getByTestId("health-badge");
    expect(badge.textContent).toBe("error");
    expect(badge.tabIndex).toBe(0);
    const tip = document.getElementById(badge.getAttribute("aria-describedby")!)!;
    expect(tip.getAttribute("role")).toBe("tooltip");
    expect(tip.textContent).toContain("only 0.4 GiB disk left. Fix: free space on the data volume.");
    expect(tip.textContent).toContain("last readings 9 s old. Fix: check the node's load.");
  });

  it("shows a node cooling off as a warning and one failing again and again as an error", () => {
    const remedy = "see the node's log (`skulk logs`) and GET /v1/diagnostics/cluster";
    const { unmount } = render(<HealthBadge level="warn" reasons={[
      { code: "cooling_off", level: "warn", remedy,
        message: "cooling off: 1 runner failure(s) in a row, the last: the runner did not report within 60 s of starting; placement avoids the node for 299 s more" },
    ]} />);
    let badge = screen.getByTestId("health-badge");
    expect(badge.textContent).toBe("warning");
    let tip = document.getElementById(badge.getAttribute("aria-describedby")!)!;
    expect(tip.textContent).toContain("cooling off: 1 runner failure(s) in a row");
    expect(tip.textContent).toContain("299 s more. Fix: see the node's log");
    unmount();
    render(<HealthBadge level="error" reasons={[
      { code: "unhealthy", level: "error", remedy,
        message: "unhealthy: 2 runner failure(s) in a row, the last: a running request made no progress for 30 s; placement avoids the node for 599 s more" },
    ]} />);
    badge = screen.getByTestId("health-badge");
    expect(badge.textContent).toBe("error");
    tip = document.getElementById(badge.getAttribute("aria-describedby")!)!;
    expect(tip.textContent).toContain("unhealthy: 2 runner failure(s) in a row");
  });
});

describe("Meter", () => {
  it("exposes its value to assistive technology and warns when nearly full", () => {
    const { container } = render(<Meter label="Memory" fraction={0.95} valueText="15 GiB of 16 GiB used" />);
    const meter = screen.getByRole("meter", { name: "Memory" });
    expect(meter.getAttribute("aria-valuenow")).toBe("95");
    expect(meter.getAttribute("aria-valuetext")).toBe("95%, 15 GiB of 16 GiB used");
    expect(container.querySelector(".tone-failed")).not.toBeNull();
  });
});

describe("RankProgressList", () => {
  it("draws one progress bar per rank with its node, layers and step", () => {
    render(<RankProgressList ranks={instanceView().ranks} />);
    const bars = screen.getAllByRole("progressbar");
    expect(bars.map((b) => b.getAttribute("aria-label"))).toEqual([
      "Rank 0 on node-a, layers 0–16", "Rank 1 on node-b, layers 17–29"]);
    expect(bars.map((b) => b.getAttribute("aria-valuenow"))).toEqual(["100", "43"]);  // loading: 3 of 7 steps
  });
});

describe("Nav", () => {
  it("marks the current view", () => {
    render(<Nav current="traces" />);
    expect(screen.getByRole("link", { name: "Traces" }).getAttribute("aria-current")).toBe("page");
    expect(screen.getByRole("link", { name: "Chat" }).getAttribute("href")).toBe("#/chat");
  });
});

describe("KeyPrompt", () => {
  it("keeps the key in this browser and says so", () => {
    const saved = vi.fn();
    render(<KeyPrompt onSaved={saved} />);
    fireEvent.change(screen.getByLabelText("API key"), { target: { value: " secret " } });
    fireEvent.click(screen.getByRole("button", { name: "Use key" }));
    expect(localStorage.getItem(KEY_STORAGE)).toBe("secret");
    expect(saved).toHaveBeenCalledOnce();
  });
});
