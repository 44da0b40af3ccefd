// The live event log: pages merged in order by sequence, bounded, filtered by type.

import type { EventRecord } from "../api/types";

export const EVENT_LOG_CAPACITY = 1000;

export function mergeEvents(current: EventRecord[], incoming: EventRecord[], capacity = EVENT_LOG_CAPACITY): EventRecord[] {
  if (incoming.length === 0) return current;
  const bySeq = new Map(current.map((e) => [e.seq, e]));
  for (const event of incoming) bySeq.set(event.seq, event);
  return [...bySeq.values()].sort((a, b) => a.seq - b.seq).slice(-capacity);
}

/** The cursor for the next page; a node that restarted (its sequence went back) starts over. */
export function nextCursor(current: number, lastSeq: number): number {
  return lastSeq < current ? 0 : lastSeq;
}

export function eventKinds(events: EventRecord[]): string[] {
  return [...new Set(events.map((e) => e.kind))].sort();
}

/** Events of the chosen kinds (all when none is chosen), newest first, matching `text`. */
export function visibleEvents(events: EventRecord[], kinds: Set<string>, text = ""): EventRecord[] {
  const needle = text.trim().toLowerCase();
  return events
    .filter((e) => kinds.size === 0 || kinds.has(e.kind))
    .filter((e) => !needle || `${e.kind} ${e.summary}`.toLowerCase().includes(needle))
    .reverse();
}
