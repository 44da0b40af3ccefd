import { useEffect, useRef, useState } from "react";
import { api } from "../../api/client";
import type { EventRecord } from "../../api/types";
import { ErrorNote } from "../../components/ErrorNote";
import { eventKinds, mergeEvents, nextCursor, visibleEvents } from "../../state/events";
import { formatClock } from "../../state/format";
import { EventFilters } from "./EventFilters";

const EVENTS_POLL_MS = 1500;

export function EventsView() {
  const [events, setEvents] = useState<EventRecord[]>([]);
  const [error, setError] = useState<Error | null>(null);
  const [chosen, setChosen] = useState<Set<string>>(new Set());
  const [text, setText] = useState("");
  const [paused, setPaused] = useState(false);
  const cursor = useRef(0);

  useEffect(() => {
    if (paused) return undefined;
    let stopped = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const poll = async () => {
      try {
        const page = await api.events(cursor.current);
        const restarted = nextCursor(cursor.current, page.last_seq) === 0 && cursor.current > 0;
        if (!stopped) {
          setEvents((current) => mergeEvents(restarted ? [] : current, page.events));
          cursor.current = nextCursor(cursor.current, page.last_seq);
          setError(null);
        }
      } catch (caught) {
        if (!stopped) setError(caught as Error);
      }
      if (!stopped) timer = setTimeout(poll, EVENTS_POLL_MS);
    };
    void poll();
    return () => {
      stopped = true;
      if (timer) clearTimeout(timer);
    };
  }, [paused]);

  const toggle = (kind: string) => setChosen((current) => {
    const next = new Set(current);
    if (next.has(kind)) next.delete(kind);
    else next.add(kind);
    return next;
  });
  const shown = visibleEvents(events, chosen, text);

  return (
    <section aria-labelledby="events-title">
      <h2 id="events-title">Events</h2>
      <ErrorNote error={error} what="read the events" />
      <EventFilters kinds={eventKinds(events)} chosen={chosen} onToggle={toggle} text={text} onText={setText}
        paused={paused} onPause={setPaused} />
      <p className="muted small" aria-live="polite">{shown.length} of {events.length} events{paused ? " (paused)" : ""}</p>
      <div className="table-wrap">
        <table className="events">
          <caption className="sr-only">Recent indexed events, newest first</caption>
          <thead>
            <tr><th scope="col">#</th><th scope="col">Applied</th><th scope="col">Type</th><th scope="col">What</th></tr>
          </thead>
          <tbody>
            {shown.map((e) => (
              <tr key={e.seq} data-kind={e.kind}>
                <td title={`index ${e.index} of session ${e.session}`}>{e.index}</td>
                <td>{formatClock(e.applied_at)}</td>
                <td><span className="chip">{e.kind}</span></td>
                <td>
                  <details>
                    <summary>{e.summary || "(no fields)"}{e.origin ? ` — from ${e.origin}` : ""}</summary>
                    <pre>{e.detail}</pre>
                  </details>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </section>
  );
}
