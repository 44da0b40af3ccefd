import type { Waterfall as Chart } from "../../state/traces";
import { formatMs } from "../../state/format";

/** One lane per process (a node's API, or a node's rank); each span a bar on a shared axis. */
export function Waterfall({ chart }: { chart: Chart }) {
  if (chart.lanes.length === 0) return <p className="muted">This trace has no spans.</p>;
  const ticks = [0, 0.25, 0.5, 0.75, 1];
  return (
    <div className="waterfall" role="group" aria-label={`Waterfall over ${formatMs(chart.totalUs / 1000)}`}>
      <div className="wf-axis" aria-hidden="true">
        {ticks.map((t) => (
          <span key={t} style={{ left: `${t * 100}%` }}>{t === 0 ? "0" : formatMs((chart.totalUs * t) / 1000)}</span>
        ))}
      </div>
      {chart.lanes.map((lane) => (
        <div className="wf-lane" key={lane.label}>
          <div className="wf-label">{lane.label}</div>
          <ul className="wf-track" aria-label={`Spans of ${lane.label}`}>
            {lane.spans.map((span, i) => {
              const text = `${span.name}: starts at ${formatMs(span.startUs / 1000)}, lasts ${formatMs(span.durationUs / 1000)}`;
              return (
                <li key={i} className={`wf-bar cat-${span.name.split(".")[0]}`} tabIndex={0} title={text} aria-label={text}
                  style={{ left: `${span.leftPct}%`, width: `${span.widthPct}%` }}>
                  <span className="wf-name">{span.name}</span>
                </li>
              );
            })}
          </ul>
        </div>
      ))}
    </div>
  );
}
