import { useEffect, useState } from "react";
import { api } from "../../api/client";
import type { ChromeTrace } from "../../api/types";
import { ErrorNote } from "../../components/ErrorNote";
import { usePoll } from "../../hooks/usePoll";
import { traceList, waterfall } from "../../state/traces";
import { TraceTable } from "./TraceTable";
import { Waterfall } from "./Waterfall";

export function TracesView() {
  const tracing = usePoll(api.tracing, 5000);
  const traces = usePoll(api.traces, 3000);
  const [selected, setSelected] = useState<string | null>(null);
  const [trace, setTrace] = useState<ChromeTrace | null>(null);
  const [error, setError] = useState<Error | null>(null);
  // What was last asked for, shown at once until a poll of the node agrees.
  const [asked, setAsked] = useState<boolean | null>(null);
  const enabled = asked ?? tracing.data?.enabled ?? false;

  useEffect(() => {
    if (!selected) return undefined;
    let current = true;
    setTrace(null);
    api.trace(selected).then((t) => current && setTrace(t), (e: Error) => current && setError(e));
    return () => { current = false; };
  }, [selected]);

  useEffect(() => {
    if (asked !== null && tracing.data?.enabled === asked) setAsked(null);
  }, [asked, tracing.data]);

  const toggle = async (on: boolean) => {
    setAsked(on);
    try {
      setAsked((await api.setTracing(on)).enabled);
    } catch (caught) {
      setError(caught as Error);
      setAsked(null);
    }
    tracing.refresh();
  };
  const list = traces.data ? traceList(traces.data) : [];

  return (
    <section aria-labelledby="traces-title">
      <h2 id="traces-title">Traces</h2>
      <ErrorNote error={error ?? traces.error ?? tracing.error} what="read the traces" />
      <div className="row">
        <input type="checkbox" id="tracing-on" checked={enabled} disabled={!tracing.data}
          onChange={(e) => void toggle(e.target.checked)} />
        <label htmlFor="tracing-on">Trace requests on this node</label>
      </div>
      {list.length === 0
        ? <p className="muted">No traces yet. Switch tracing on, then send a request (the Chat view will do).</p>
        : <TraceTable traces={list} selected={selected} onOpen={setSelected} />}
      {selected && (
        <section className="panel" aria-labelledby="trace-title">
          <h3 id="trace-title">Trace <code>{selected}</code></h3>
          {trace ? <Waterfall chart={waterfall(trace)} /> : <p className="muted">Reading the trace…</p>}
        </section>
      )}
    </section>
  );
}
