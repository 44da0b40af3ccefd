"""A lightweight streaming client for serving benchmarks: raw asyncio HTTP/1.1, no JSON
parsing per event, so it costs little beside the node it measures (its own CPU is
reported with every run).

Each stream posts a streamed chat completion and notes when every server-sent event
carrying text arrives; the last event's usage says how many tokens came.
"""

import asyncio
import json
import resource
import time
from dataclasses import dataclass, field

_TEXT_MARK = b'"content":"'
_EMPTY_TEXT = b'"content":""'
_USAGE_MARK = b'"usage":{"prompt_tokens"'


@dataclass
class StreamResult:
    tokens: int = 0  # from the final usage
    text_events: int = 0
    gaps: list[float] = field(default_factory=list)  # seconds between text events
    first_token_seconds: float | None = None


@dataclass
class LevelResult:
    streams: int
    requests: int
    tokens: int
    text_events: int
    wall_seconds: float
    client_cpu_seconds: float
    gaps: list[float]
    first_token_seconds: list[float]


def _request(host: str, port: int, prompt: str, max_tokens: int) -> bytes:
    body = json.dumps({"model": "smollm2-135m", "stream": True, "max_tokens": max_tokens,
                       "stream_options": {"include_usage": True},
                       "messages": [{"role": "user", "content": prompt}]}).encode()
    head = (f"POST /v1/chat/completions HTTP/1.1\r\nHost: {host}:{port}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
            "Accept: text/event-stream\r\n\r\n").encode()
    return head + body


async def _read_head(reader: asyncio.StreamReader) -> bool:
    """Reads the response head; True when the body is chunked."""
    head = await reader.readuntil(b"\r\n\r\n")
    status = head.split(b" ", 2)[1]
    if status != b"200":
        rest = await reader.read(2000)
        raise RuntimeError(f"HTTP {status.decode()}: {(head + rest).decode(errors='replace')}")
    return b"transfer-encoding: chunked" in head.lower()


def _events(buffer: bytearray) -> list[bytes]:
    """Whole server-sent events taken from the front of `buffer`."""
    events: list[bytes] = []
    while True:
        end = buffer.find(b"\n\n")
        if end < 0:
            return events
        events.append(bytes(buffer[:end]))
        del buffer[:end + 2]


async def one_stream(reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                     host: str, port: int, prompt: str, max_tokens: int) -> StreamResult:
    """One streamed completion on an open keep-alive connection."""
    result = StreamResult()
    started = last = time.perf_counter()
    writer.write(_request(host, port, prompt, max_tokens))
    chunked = await _read_head(reader)
    assert chunked, "a streamed completion comes chunked"
    pending = bytearray()
    while True:
        size = int((await reader.readline()).strip(), 16)
        if size == 0:
            await reader.readline()
            return result
        data = await reader.readexactly(size + 2)
        pending += data[:-2]
        now = time.perf_counter()
        for event in _events(pending):
            if _TEXT_MARK in event and _EMPTY_TEXT not in event:
                if result.first_token_seconds is None:
                    result.first_token_seconds = now - started
                else:
                    result.gaps.append(now - last)
                last = now
                result.text_events += 1
            if _USAGE_MARK in event:
                usage = json.loads(event.removeprefix(b"data: "))["usage"]
                result.tokens = int(usage["completion_tokens"])


async def _worker(host: str, port: int, prompt: str, max_tokens: int, requests: int,
                  results: list[StreamResult]) -> None:
    reader, writer = await asyncio.open_connection(host, port)
    try:
        for _ in range(requests):
            results.append(await one_stream(reader, writer, host, port, prompt, max_tokens))
    finally:
        writer.close()


async def run_level(host: str, port: int, streams: int, tokens: int,
                    requests_per_stream: int) -> LevelResult:
    """`streams` connections at once, each streaming `requests_per_stream` completions of
    `tokens` tokens one after another."""
    prompt = " ".join(f"w{i}" for i in range(tokens))
    results: list[StreamResult] = []
    cpu_before = resource.getrusage(resource.RUSAGE_SELF)
    started = time.perf_counter()
    await asyncio.gather(*(_worker(host, port, prompt, tokens, requests_per_stream, results)
                           for _ in range(streams)))
    wall = time.perf_counter() - started
    cpu_after = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (cpu_after.ru_utime - cpu_before.ru_utime) + (cpu_after.ru_stime - cpu_before.ru_stime)
    return LevelResult(
        streams=streams, requests=len(results), tokens=sum(r.tokens for r in results),
        text_events=sum(r.text_events for r in results), wall_seconds=wall,
        client_cpu_seconds=cpu, gaps=[g for r in results for g in r.gaps],
        first_token_seconds=[r.first_token_seconds for r in results
                             if r.first_token_seconds is not None])
