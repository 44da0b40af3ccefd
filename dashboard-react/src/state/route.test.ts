import { describe, expect, it } from "vitest";
import { hashFor, hashForPath, viewFromHash } from "./route";

describe("route", () => {
  it("reads the view from the hash, cluster by default", () => {
    expect(viewFromHash("#/models")).toBe("models");
    expect(viewFromHash("#traces")).toBe("traces");
    expect(viewFromHash("#/chat?model=x")).toBe("chat");
    expect(viewFromHash("")).toBe("cluster");
    expect(viewFromHash("#/nope")).toBe("cluster");
  });

  it("round-trips", () => {
    expect(viewFromHash(hashFor("events"))).toBe("events");
  });

  it("moves a view's path into the hash, keeping its query", () => {
    expect(hashForPath("/models", "", "")).toBe("#/models");
    expect(hashForPath("/chat", "?model=x", "")).toBe("#/chat?model=x");
    expect(viewFromHash(hashForPath("/traces/", "", "#")!)).toBe("traces");
    expect(hashForPath("/", "", "")).toBeNull();
    expect(hashForPath("/nope", "", "")).toBeNull();
    expect(hashForPath("/models", "", "#/chat")).toBeNull();
  });
});
