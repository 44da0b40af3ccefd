import { useCallback, useEffect, useRef, useState } from "react";

export interface Polled<T> {
  data: T | null;
  error: Error | null;
  refresh: () => void;
}

/** Calls `fetcher` now and then every `intervalMs` (never two at once); keeps the last good
 * answer while a later call fails. */
export function usePoll<T>(fetcher: () => Promise<T>, intervalMs: number, enabled = true): Polled<T> {
  const [data, setData] = useState<T | null>(null);
  const [error, setError] = useState<Error | null>(null);
  const fetcherRef = useRef(fetcher);
  fetcherRef.current = fetcher;
  const [tick, setTick] = useState(0);
  const refresh = useCallback(() => setTick((n) => n + 1), []);

  useEffect(() => {
    if (!enabled) return undefined;
    let stopped = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const run = async () => {
      try {
        const value = await fetcherRef.current();
        if (!stopped) {
          setData(value);
          setError(null);
        }
      } catch (caught) {
        if (!stopped) setError(caught instanceof Error ? caught : new Error(String(caught)));
      }
      if (!stopped) timer = setTimeout(run, intervalMs);
    };
    void run();
    return () => {
      stopped = true;
      if (timer) clearTimeout(timer);
    };
  }, [intervalMs, enabled, tick]);

  return { data, error, refresh };
}
