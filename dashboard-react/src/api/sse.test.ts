import { describe, expect, it } from "vitest";
import { SseParser } from "./sse";

describe("SSE parser", () => {
  it("completes events only at a blank line, across arbitrary pieces", () => {
    const parser = new SseParser();
    expect(parser.push('data: {"a"')).toEqual([]);
    expect(parser.push(':1}\n')).toEqual([]);
    expect(parser.push("\ndata: [DONE]\n\n")).toEqual([
      { event: null, data: '{"a":1}' }, { event: null, data: "[DONE]" }]);
  });

  it("joins data lines, reads event names, skips comments and handles CRLF", () => {
    const parser = new SseParser();
    expect(parser.push(": keep-alive\r\n\r\nevent: message_start\r\ndata: one\r\ndata:two\r\n\r\n")).toEqual([
      { event: "message_start", data: "one\ntwo" }]);
  });
});
