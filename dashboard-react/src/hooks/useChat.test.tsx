// @vitest-environment jsdom
// The chat hook against a fake fetch; the real node is exercised by the e2e suite.
import { act, renderHook, waitFor } from "@testing-library/react";
import { afterEach, describe, expect, it, vi } from "vitest";
import { useChat } from "./useChat";

const encoder = new TextEncoder();
const sse = (payload: unknown) => `data: ${typeof payload === "string" ? payload : JSON.stringify(payload)}\n\n`;
const delta = (content: string, finish: string | null = null) =>
  sse({ choices: [{ index: 0, delta: content ? { content } : {}, finish_reason: finish }] });

function streamResponse(pieces: string[], keepOpen = false): Response {
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      for (const piece of pieces) controller.enqueue(encoder.encode(piece));
      if (!keepOpen) controller.close();
    },
  });
  return new Response(body, { status: 200, headers: { "Content-Type": "text/event-stream", "X-Skulk-Command-Id": "cmd-42" } });
}

afterEach(() => vi.unstubAllGlobals());

describe("useChat", () => {
  it("streams a reply into the conversation with its figures and raw events", async () => {
    const fetch = vi.fn(async () => streamResponse([
      delta("Hel"), delta("lo"), delta("", "stop"),
      sse({ choices: [], usage: { prompt_tokens: 5, completion_tokens: 2 } }), sse("[DONE]")]));
    vi.stubGlobal("fetch", fetch);
    const { result } = renderHook(() => useChat("smollm2-135m", { maxTokens: 16, temperature: 1 }));
    await act(() => result.current.send("hi"));
    const [user, reply] = result.current.turns;
    expect(user).toEqual({ role: "user", content: "hi" });
    expect(reply).toMatchObject({ role: "assistant", content: "Hello", state: "done", finishReason: "stop", commandId: "cmd-42" });
    expect(reply!.metrics).toMatchObject({ completionTokens: 2, promptTokens: 5 });
    expect(reply!.metrics!.ttftMs).not.toBeNull();
    expect(reply!.raw!.response).toHaveLength(5);
    const body = JSON.parse((fetch.mock.calls[0] as unknown as [string, RequestInit])[1].body as string);
    expect(body).toMatchObject({ model: "smollm2-135m", stream: true, max_tokens: 16, messages: [{ role: "user", content: "hi" }] });
    expect(result.current.streaming).toBe(false);
  });

  it("stops a generation by cancelling its command on the node", async () => {
    let node: ReadableStreamDefaultController<Uint8Array> | undefined;
    const fetch = vi.fn(async (url: string) => {
      if (url === "/v1/cancel/cmd-42") {
        // As the node does: the cancelled stream ends with an error chunk.
        node!.enqueue(encoder.encode(sse({ error: { message: "the request was cancelled" } })));
        node!.close();
        return new Response(JSON.stringify({ cancelled: "cmd-42" }), { status: 200 });
      }
      const body = new ReadableStream<Uint8Array>({
        start(controller) {
          node = controller;
          controller.enqueue(encoder.encode(delta("Once")));
        },
      });
      return new Response(body, { status: 200, headers: { "X-Skulk-Command-Id": "cmd-42" } });
    });
    vi.stubGlobal("fetch", fetch);
    const { result } = renderHook(() => useChat("m", { maxTokens: 4000, temperature: 1 }));
    let sending: Promise<void> = Promise.resolve();
    act(() => { sending = result.current.send("a long story"); });
    await waitFor(() => expect(result.current.turns[1]?.content).toBe("Once"));
    expect(result.current.streaming).toBe(true);
    await act(async () => {
      await result.current.stop();
      await sending;
    });
    expect(fetch).toHaveBeenCalledWith("/v1/cancel/cmd-42", expect.objectContaining({ method: "POST" }));
    expect(result.current.turns[1]).toMatchObject({ content: "Once", state: "stopped" });
    expect(result.current.turns[1]!.error).toBeUndefined();
    expect(result.current.streaming).toBe(false);
  });

  it("shows the node's error when the request is refused", async () => {
    vi.stubGlobal("fetch", vi.fn(async () => new Response(
      JSON.stringify({ error: { message: "model 'nope' not found" } }), { status: 404 })));
    const { result } = renderHook(() => useChat("nope", { maxTokens: 8, temperature: 1 }));
    await act(() => result.current.send("hi"));
    expect(result.current.turns[1]).toMatchObject({ state: "error", error: "model 'nope' not found" });
  });
});
