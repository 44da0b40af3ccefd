// Numbers as people read them.

const UNITS = ["B", "KiB", "MiB", "GiB", "TiB"];

export function formatBytes(bytes: number | null | undefined): string {
  if (bytes === null || bytes === undefined || !Number.isFinite(bytes)) return "–";
  let value = Math.max(bytes, 0);
  let unit = 0;
  while (value >= 1024 && unit < UNITS.length - 1) {
    value /= 1024;
    unit += 1;
  }
  const digits = unit === 0 || value >= 100 ? 0 : value >= 10 ? 1 : 2;
  return `${value.toFixed(digits)} ${UNITS[unit]}`;
}

export function formatMs(ms: number | null | undefined): string {
  if (ms === null || ms === undefined || !Number.isFinite(ms)) return "–";
  if (ms < 1) return `${(ms * 1000).toFixed(0)} µs`;
  if (ms < 1000) return `${ms.toFixed(ms < 10 ? 1 : 0)} ms`;
  return `${(ms / 1000).toFixed(2)} s`;
}

export function formatPercent(fraction: number): string {
  return `${Math.round(Math.min(Math.max(fraction, 0), 1) * 100)}%`;
}

export function formatRate(perSecond: number | null | undefined, unit = "tok/s"): string {
  if (perSecond === null || perSecond === undefined || !Number.isFinite(perSecond)) return "–";
  return `${perSecond.toFixed(perSecond < 10 ? 1 : 0)} ${unit}`;
}

export function formatClock(unixSeconds: number): string {
  const date = new Date(unixSeconds * 1000);
  const pad = (n: number, width = 2) => String(n).padStart(width, "0");
  return `${pad(date.getHours())}:${pad(date.getMinutes())}:${pad(date.getSeconds())}.${pad(
    date.getMilliseconds(), 3)}`;
}

/** Layers as people count them: `start`..`end - 1`, both inclusive. */
export function formatLayers(start: number, end: number): string {
  return end - start === 1 ? `layer ${start}` : `layers ${start}–${end - 1}`;
}
