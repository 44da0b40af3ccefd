const TONES: Record<string, string> = {
  ready: "ok", running: "ok", complete: "ok", done: "ok",
  loading: "warn", pending: "warn", created: "warn", loaded: "warn", warming_up: "warn",
  failed: "error", shutdown: "error", cancelled: "error",
};

export function StatusBadge({ status, label }: { status: string; label?: string }) {
  return (
    <span className={`badge health-${TONES[status] ?? "neutral"}`} data-status={status}>
      {label ?? status.replace("_", " ")}
    </span>
  );
}
