import { describe, expect, it } from "vitest";
import type { EventRecord } from "../api/types";
import { eventKinds, mergeEvents, nextCursor, visibleEvents } from "./events";

const record = (seq: number, kind: string, summary = ""): EventRecord => ({
  seq, index: seq - 1, session: "s", master_node: "m", kind, origin: null, applied_at: seq, summary, detail: "{}" });

describe("event log", () => {
  it("merges pages by sequence without duplicates and keeps the newest", () => {
    const merged = mergeEvents([record(1, "A"), record(2, "B")], [record(2, "B"), record(3, "C")]);
    expect(merged.map((e) => e.seq)).toEqual([1, 2, 3]);
    expect(mergeEvents(merged, [record(4, "A")], 2).map((e) => e.seq)).toEqual([3, 4]);
    expect(mergeEvents(merged, [])).toBe(merged);
  });

  it("starts over when the node's sequence went back", () => {
    expect(nextCursor(10, 12)).toBe(12);
    expect(nextCursor(10, 3)).toBe(0);
  });

  it("filters by kind and text, newest first", () => {
    const events = [record(1, "TaskCreated", "task_id=t1"), record(2, "InstanceCreated"), record(3, "TaskCreated", "task_id=t2")];
    expect(eventKinds(events)).toEqual(["InstanceCreated", "TaskCreated"]);
    expect(visibleEvents(events, new Set()).map((e) => e.seq)).toEqual([3, 2, 1]);
    expect(visibleEvents(events, new Set(["TaskCreated"])).map((e) => e.seq)).toEqual([3, 1]);
    expect(visibleEvents(events, new Set(["TaskCreated"]), "T2").map((e) => e.seq)).toEqual([3]);
  });
});
