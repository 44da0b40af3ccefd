import { useId } from "react";
import type { HealthLevel, HealthReason } from "../api/types";
import { healthText } from "../state/cluster";

const LABELS: Record<HealthLevel, string> = { ok: "healthy", warn: "warning", error: "error" };

/** The node's health; hovering or focusing it shows each problem and its fix. */
export function HealthBadge({ level, reasons }: { level: HealthLevel; reasons: HealthReason[] }) {
  const tipId = useId();
  const text = healthText(level, reasons);
  return (
    <span className="tip-anchor">
      <span className={`badge health-${level}`} tabIndex={0} aria-describedby={tipId} data-testid="health-badge">
        {LABELS[level]}
      </span>
      <span role="tooltip" id={tipId} className="tip">
        {text.split("\n").map((line) => (
          <span key={line} className="tip-line">{line}</span>
        ))}
      </span>
    </span>
  );
}
