import { describe, expect, it } from "vitest";
import { loadTheme, nextTheme, resolveTheme, THEME_STORAGE } from "./theme";

describe("theme", () => {
  it("loads a saved choice and falls back to the system's", () => {
    expect(loadTheme({ getItem: (k) => (k === THEME_STORAGE ? "dark" : null) })).toBe("dark");
    expect(loadTheme({ getItem: () => "purple" })).toBe("system");
    expect(loadTheme(undefined)).toBe("system");
  });

  it("follows the system unless told, and cycles through the choices", () => {
    expect(resolveTheme("system", true)).toBe("dark");
    expect(resolveTheme("system", false)).toBe("light");
    expect(resolveTheme("light", true)).toBe("light");
    expect([nextTheme("system"), nextTheme("light"), nextTheme("dark")]).toEqual(["light", "dark", "system"]);
  });
});
