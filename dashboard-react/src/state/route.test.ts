import { describe, expect, it } from "vitest";
import { hashFor, viewFromHash } from "./route";

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
});
