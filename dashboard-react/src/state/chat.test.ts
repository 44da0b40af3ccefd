import { describe, expect, it } from "vitest";
import { buildChatRequest, finalState, readChunk, replyMetrics, tick, type ChatTurn, type StreamClock } from "./chat";

const chunk = (content: string | null, finish: string | null = null) =>
  JSON.stringify({ choices: [{ index: 0, delta: content === null ? {} : { content }, finish_reason: finish }] });

describe("chat request", () => {
  it("streams with usage and leaves out failed or empty replies", () => {
    const turns: ChatTurn[] = [
      { role: "user", content: "hi" },
      { role: "assistant", content: "", state: "error", error: "boom" },
      { role: "user", content: "again" },
      { role: "assistant", content: "Hello", state: "done" },
    ];
    expect(buildChatRequest("smollm2-135m", turns, { maxTokens: 64, temperature: 0.7 })).toEqual({
      model: "smollm2-135m", stream: true, stream_options: { include_usage: true }, max_tokens: 64, temperature: 0.7,
      messages: [{ role: "user", content: "hi" }, { role: "user", content: "again" },
        { role: "assistant", content: "Hello" }],
    });
  });
});

describe("chunks", () => {
  it("reads content, finish reason, usage, errors and the end marker", () => {
    expect(readChunk(chunk("Hel"))).toEqual({ content: "Hel", finishReason: null, usage: null, error: null });
    expect(readChunk(chunk(null, "length"))).toMatchObject({ content: "", finishReason: "length" });
    expect(readChunk(JSON.stringify({ choices: [], usage: { prompt_tokens: 3, completion_tokens: 8 } })))
      .toMatchObject({ usage: { prompt_tokens: 3, completion_tokens: 8 } });
    expect(readChunk(JSON.stringify({ error: { message: "runner died" } }))).toMatchObject({ error: "runner died" });
    expect(readChunk("[DONE]")).toBe("done");
  });
});

describe("reply metrics", () => {
  it("measures TTFT to the first content and decode speed after it", () => {
    let clock: StreamClock = { startedAt: 1000, firstTokenAt: null, lastTokenAt: null, contentChunks: 0 };
    clock = tick(clock, readChunk(chunk("")) as never, 1050); // role chunk: no content yet
    expect(clock.firstTokenAt).toBeNull();
    for (const [text, at] of [["Hello", 1150], ["!", 1200], [" How", 1250], [" are", 1350]] as const) {
      clock = tick(clock, readChunk(chunk(text)) as never, at);
    }
    expect(replyMetrics(clock, null)).toEqual({ ttftMs: 150, tokensPerSecond: 15, completionTokens: 4, promptTokens: null });
    const withUsage = replyMetrics(clock, { prompt_tokens: 31, completion_tokens: 5 });
    expect(withUsage.tokensPerSecond).toBe(20);
    expect(withUsage.promptTokens).toBe(31);
  });

  it("has no speed for a reply of one token or none", () => {
    const clock: StreamClock = { startedAt: 0, firstTokenAt: 10, lastTokenAt: 10, contentChunks: 1 };
    expect(replyMetrics(clock, null).tokensPerSecond).toBeNull();
    expect(replyMetrics({ ...clock, firstTokenAt: null, lastTokenAt: null, contentChunks: 0 }, null).ttftMs).toBeNull();
  });

  it("names how the reply ended", () => {
    expect(finalState("stop", false, null)).toBe("done");
    expect(finalState("length", true, null)).toBe("stopped");
    expect(finalState("cancelled", false, null)).toBe("stopped");
    expect(finalState(null, false, "boom")).toBe("error");
    expect(finalState(null, true, "the request was cancelled")).toBe("stopped");
  });
});
