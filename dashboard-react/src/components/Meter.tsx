import { formatPercent } from "../state/format";

interface MeterProps {
  label: string;
  fraction: number;
  // What the numbers mean, read out after the label, e.g. "6.0 GiB of 16 GiB used".
  valueText: string;
  kind?: "meter" | "progressbar";
  tone?: "normal" | "done" | "failed";
}

/** A horizontal bar with its label and figures; a meter for usage, a progress bar for work. */
export function Meter({ label, fraction, valueText, kind = "meter", tone }: MeterProps) {
  const clamped = Math.min(Math.max(fraction, 0), 1);
  const level = tone ?? (kind === "meter" && clamped > 0.9 ? "failed" : "normal");
  return (
    <div className="meter">
      <div className="meter-label">
        <span>{label}</span>
        <span className="meter-value">{valueText}</span>
      </div>
      <div
        className={`meter-track tone-${level}`}
        role={kind}
        aria-label={label}
        aria-valuemin={0}
        aria-valuemax={100}
        aria-valuenow={Math.round(clamped * 100)}
        aria-valuetext={`${formatPercent(clamped)}, ${valueText}`}
      >
        <div className="meter-fill" style={{ width: `${clamped * 100}%` }} />
      </div>
    </div>
  );
}
