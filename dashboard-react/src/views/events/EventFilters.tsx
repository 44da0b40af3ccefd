interface Props {
  kinds: string[];
  chosen: Set<string>;
  onToggle: (kind: string) => void;
  text: string;
  onText: (text: string) => void;
  paused: boolean;
  onPause: (paused: boolean) => void;
}

export function EventFilters({ kinds, chosen, onToggle, text, onText, paused, onPause }: Props) {
  return (
    <div className="event-filters">
      <div role="group" aria-label="Filter by event type" className="chips">
        {kinds.map((kind) => (
          <button key={kind} type="button" className="chip toggle" aria-pressed={chosen.has(kind)} onClick={() => onToggle(kind)}>
            {kind}
          </button>
        ))}
      </div>
      <div className="row">
        <label htmlFor="event-search">Search</label>
        <input id="event-search" type="search" value={text} onChange={(e) => onText(e.target.value)} placeholder="task id, instance id…" />
        <button type="button" className="secondary" aria-pressed={paused} onClick={() => onPause(!paused)}>
          {paused ? "Resume" : "Pause"}
        </button>
      </div>
    </div>
  );
}
