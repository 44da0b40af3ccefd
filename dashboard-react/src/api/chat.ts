// Streams one chat completion from the node, reporting each step to the caller.

import { ApiError, authHeaders, errorMessage, storedKey } from "./client";
import { SseParser } from "./sse";
import { readChunk, type ChunkDelta } from "../state/chat";

export const COMMAND_ID_HEADER = "X-Skulk-Command-Id";

export interface StreamHandlers {
  onStart(commandId: string | null): void;
  onRaw(data: string): void;
  onDelta(delta: ChunkDelta, at: number): void;
}

/** Resolves when the stream ends (normally, by error chunk, or by `signal`). */
export async function streamChat(body: unknown, handlers: StreamHandlers, signal: AbortSignal): Promise<void> {
  const response = await fetch("/v1/chat/completions", {
    method: "POST",
    headers: { "Content-Type": "application/json", ...authHeaders(storedKey()) },
    body: JSON.stringify(body),
    signal,
  });
  if (!response.ok || !response.body) {
    const error: unknown = await response.json().catch(() => null);
    throw new ApiError(response.status, errorMessage(error, `${response.status} ${response.statusText}`));
  }
  handlers.onStart(response.headers.get(COMMAND_ID_HEADER));
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  const parser = new SseParser();
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    for (const event of parser.push(value)) {
      handlers.onRaw(event.data);
      const delta = readChunk(event.data);
      if (delta === "done") return;
      handlers.onDelta(delta, performance.now());
    }
  }
}
