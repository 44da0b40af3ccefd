// A chat conversation: the request it sends, the streamed reply it accumulates, and the
// figures people ask of each reply (time to first token, tokens per second).

export interface ReplyMetrics {
  ttftMs: number | null;
  tokensPerSecond: number | null;
  completionTokens: number;
  promptTokens: number | null;
}

export type ReplyState = "streaming" | "done" | "stopped" | "error";

export interface ChatTurn {
  role: "user" | "assistant";
  content: string;
  state?: ReplyState;
  error?: string;
  finishReason?: string | null;
  commandId?: string | null;
  metrics?: ReplyMetrics;
  raw?: { request: unknown; response: string[] };
}

export interface StreamClock {
  startedAt: number;
  firstTokenAt: number | null;
  lastTokenAt: number | null;
  contentChunks: number;
}

/** What the composer's controls set on each request. */
export interface ChatSettings {
  maxTokens: number;
  /** 0 is greedy: the same prompt gets the same reply. */
  temperature: number;
}

export function buildChatRequest(model: string, turns: ChatTurn[], settings: ChatSettings): Record<string, unknown> {
  return {
    model,
    stream: true,
    stream_options: { include_usage: true },
    max_tokens: settings.maxTokens,
    temperature: settings.temperature,
    messages: turns
      .filter((t) => t.role === "user" || (t.state !== "error" && t.content !== ""))
      .map((t) => ({ role: t.role, content: t.content })),
  };
}

export interface ChunkDelta {
  content: string;
  finishReason: string | null;
  usage: { prompt_tokens: number; completion_tokens: number } | null;
  error: string | null;
}

/** What one OpenAI chat-completion chunk adds to the reply. */
export function readChunk(data: string): ChunkDelta | "done" {
  if (data.trim() === "[DONE]") return "done";
  const chunk = JSON.parse(data) as {
    choices?: { delta?: { content?: string | null }; finish_reason?: string | null }[];
    usage?: { prompt_tokens: number; completion_tokens: number } | null;
    error?: { message?: string } | string;
  };
  if (chunk.error) {
    const message = typeof chunk.error === "string" ? chunk.error : (chunk.error.message ?? "error");
    return { content: "", finishReason: null, usage: null, error: message };
  }
  const choice = chunk.choices?.[0];
  return {
    content: choice?.delta?.content ?? "",
    finishReason: choice?.finish_reason ?? null,
    usage: chunk.usage ?? null,
    error: null,
  };
}

export function tick(clock: StreamClock, delta: ChunkDelta, now: number): StreamClock {
  if (!delta.content) return clock;
  return {
    ...clock,
    firstTokenAt: clock.firstTokenAt ?? now,
    lastTokenAt: now,
    contentChunks: clock.contentChunks + 1,
  };
}

/** TTFT from sending to the first content; tokens/s over the tokens after the first. */
export function replyMetrics(clock: StreamClock, usage: ChunkDelta["usage"]): ReplyMetrics {
  const completionTokens = usage?.completion_tokens ?? clock.contentChunks;
  const ttftMs = clock.firstTokenAt === null ? null : clock.firstTokenAt - clock.startedAt;
  const decodeMs = clock.firstTokenAt !== null && clock.lastTokenAt !== null ? clock.lastTokenAt - clock.firstTokenAt : 0;
  const tokensPerSecond = decodeMs > 0 && completionTokens > 1 ? ((completionTokens - 1) * 1000) / decodeMs : null;
  return { ttftMs, tokensPerSecond, completionTokens, promptTokens: usage?.prompt_tokens ?? null };
}

/** The reply's state once its stream ended: a stopped generation may end with the
 * node's "cancelled" error, which is what was asked for, not a failure. */
export function finalState(finishReason: string | null, stopRequested: boolean, error: string | null): ReplyState {
  if (stopRequested || finishReason === "cancelled") return "stopped";
  if (error) return "error";
  return "done";
}
