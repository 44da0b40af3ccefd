import { useCallback, useRef, useState } from "react";
import { api } from "../api/client";
import { streamChat } from "../api/chat";
import { buildChatRequest, finalState, replyMetrics, tick, type ChatSettings, type ChatTurn, type ChunkDelta, type StreamClock } from "../state/chat";

// After Stop, the node ends the stream itself; this long later the page stops listening.
const STOP_GRACE_MS = 5000;

export interface Chat {
  turns: ChatTurn[];
  streaming: boolean;
  send: (text: string) => Promise<void>;
  stop: () => Promise<void>;
  clear: () => void;
}

function updateLast(turns: ChatTurn[], change: (turn: ChatTurn) => ChatTurn): ChatTurn[] {
  return [...turns.slice(0, -1), change(turns[turns.length - 1]!)];
}

export function useChat(model: string, settings: ChatSettings): Chat {
  const [turns, setTurns] = useState<ChatTurn[]>([]);
  const [streaming, setStreaming] = useState(false);
  const live = useRef<{ commandId: string | null; stopRequested: boolean; abort: AbortController } | null>(null);

  const send = useCallback(async (text: string) => {
    const history: ChatTurn[] = [...turns, { role: "user", content: text }];
    const request = buildChatRequest(model, history, settings);
    const abort = new AbortController();
    live.current = { commandId: null, stopRequested: false, abort };
    setTurns([...history, { role: "assistant", content: "", state: "streaming", raw: { request, response: [] } }]);
    setStreaming(true);
    let clock: StreamClock = { startedAt: performance.now(), firstTokenAt: null, lastTokenAt: null, contentChunks: 0 };
    let finish: string | null = null;
    let usage: ChunkDelta["usage"] = null;
    let error: string | null = null;
    try {
      await streamChat(request, {
        onStart: (commandId) => {
          live.current!.commandId = commandId;
          setTurns((t) => updateLast(t, (turn) => ({ ...turn, commandId })));
        },
        onRaw: (data) => setTurns((t) => updateLast(t, (turn) => ({
          ...turn, raw: { request, response: [...(turn.raw?.response ?? []), data] } }))),
        onDelta: (delta, at) => {
          clock = tick(clock, delta, at);
          finish = delta.finishReason ?? finish;
          usage = delta.usage ?? usage;
          error = delta.error ?? error;
          if (delta.content) setTurns((t) => updateLast(t, (turn) => ({ ...turn, content: turn.content + delta.content })));
        },
      }, abort.signal);
    } catch (caught) {
      if (!abort.signal.aborted) error = caught instanceof Error ? caught.message : String(caught);
    }
    const stopped = live.current?.stopRequested ?? false;
    const state = finalState(finish, stopped, error);
    setTurns((t) => updateLast(t, (turn) => ({
      ...turn, state, finishReason: finish, metrics: replyMetrics(clock, usage),
      ...(state === "error" && error ? { error } : {}),
    })));
    live.current = null;
    setStreaming(false);
  }, [turns, model, settings]);

  const stop = useCallback(async () => {
    const current = live.current;
    if (!current) return;
    current.stopRequested = true;
    setTimeout(() => current.abort.abort(), STOP_GRACE_MS);
    if (current.commandId) {
      // A request that just finished is no longer there to cancel: nothing to do then.
      await api.cancel(current.commandId).catch(() => current.abort.abort());
    } else {
      current.abort.abort();
    }
  }, []);

  const clear = useCallback(() => setTurns([]), []);
  return { turns, streaming, send, stop, clear };
}
