import { describe, expect, it } from "vitest";
import { formatBytes, formatLayers, formatMs, formatPercent, formatRate } from "./format";

describe("format", () => {
  it("prints bytes in binary units with sensible digits", () => {
    expect(formatBytes(0)).toBe("0 B");
    expect(formatBytes(1023)).toBe("1023 B");
    expect(formatBytes(98_362_432)).toBe("93.8 MiB");
    expect(formatBytes(24_450_125_824)).toBe("22.8 GiB");
    expect(formatBytes(null)).toBe("–");
    expect(formatBytes(-5)).toBe("0 B");
  });

  it("prints durations, rates and fractions", () => {
    expect(formatMs(0.25)).toBe("250 µs");
    expect(formatMs(3.21)).toBe("3.2 ms");
    expect(formatMs(143.1)).toBe("143 ms");
    expect(formatMs(2500)).toBe("2.50 s");
    expect(formatRate(136.4)).toBe("136 tok/s");
    expect(formatRate(9.44)).toBe("9.4 tok/s");
    expect(formatRate(null)).toBe("–");
    expect(formatPercent(0.333)).toBe("33%");
    expect(formatPercent(1.7)).toBe("100%");
  });

  it("counts layers inclusively", () => {
    expect(formatLayers(0, 30)).toBe("layers 0–29");
    expect(formatLayers(17, 18)).toBe("layer 17");
  });
});
