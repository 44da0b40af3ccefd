import type { HistoryMarker } from "../../api/history";
import { formatClock } from "../../state/format";
import { MARKER_TITLES } from "../../state/history";

/** The latest markers as text, newest first: what the charts' vertical lines stand for. */
export function MarkerList({ markers, limit = 12 }: { markers: HistoryMarker[]; limit?: number }) {
  const latest = [...markers].sort((a, b) => b.at - a.at).slice(0, limit);
  if (latest.length === 0) return <p className="muted small">No failovers, evictions, placements, joins or leaves in the last hour.</p>;
  return (
    <ul className="marker-list" aria-label="Markers">
      {latest.map((m) => (
        <li key={`${m.at}-${m.kind}-${m.text}`} className="marker-chip small" data-kind={m.kind}>
          <strong>{MARKER_TITLES[m.kind]}</strong> {formatClock(m.at).slice(0, 8)} — {m.text}
        </li>
      ))}
    </ul>
  );
}
