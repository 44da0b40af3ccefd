"""The Python each streamed token costs, piece by piece, on one request's path through
the runner and the node (no engine, no sockets): the runner's frame, the supervisor's
read and merge, the data-plane envelope and stream, the OpenAI dialect's event.

    .venv/bin/python bench/per_token_pieces.py [--quick]
    PYTHONPATH=OTHER/src .venv/bin/python bench/per_token_pieces.py   # another checkout

Each piece is timed as the best of several repeats (microseconds per token), so a busy
machine reads close to a quiet one; run a baseline checkout in the same minute to compare.
"""

import argparse
import sys
import timeit
from collections.abc import Callable
from pathlib import Path

from skulk.api.adapters.openai_chat import chunk_body
from skulk.api.consume import sse
from skulk.api.streams import StreamRegistry
from skulk.shared.types.chunks import DataChunk, TokenChunk
from skulk.shared.types.ids import CommandId, NodeId, TaskId
from skulk.worker.runner import messages
from skulk.worker.runner.coalesce import coalesce
from skulk.worker.runner.messages import FROM_RUNNER
from skulk.worker.runner.pipe_frames import FrameReader, encode

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.results import write_result  # noqa: E402

TASK, COMMAND = TaskId("task-8f3a2c1d"), CommandId("cmd-5b7e9f0a")


def envelope(chunk: TokenChunk, sequence: int) -> DataChunk:
    """What the supervisor wraps a chunk in (`built` where this checkout has it)."""
    try:
        from skulk.worker.runner.built import built
    except ImportError:
        return DataChunk.model_construct(command_id=COMMAND, owner_node=NodeId("node-a"),
                                         sequence=sequence, chunk=chunk)
    return built(DataChunk, {"command_id": COMMAND, "owner_node": NodeId("node-a"),
                             "sequence": sequence, "chunk": chunk})


def event_renderer() -> Callable[[str], bytes]:
    """The OpenAI chat stream's per-token event (the pre-rendered one where it exists)."""
    def render(text: str) -> bytes:
        return sse(chunk_body("chatcmpl-5b7e9f0a", 1700000000, "smollm2-135m",
                              {"content": text}))
    try:
        from skulk.api.text_event import TextEvent
    except ImportError:
        return render
    return TextEvent(render)


def pieces(number: int, repeat: int) -> dict[str, float]:
    step = messages.TokensProduced.model_construct(pieces=[(TASK, COMMAND, " fox", [1234])])
    frame = encode([step])
    reader = FrameReader(FROM_RUNNER)
    batch = reader.feed(frame)
    merged = coalesce(batch)
    chunk = merged[0].chunk  # type: ignore[union-attr]
    assert isinstance(chunk, TokenChunk)
    registry = StreamRegistry()
    stream = registry.open(COMMAND)
    data = envelope(chunk, 0)
    render = event_renderer()

    opened = registry._open[COMMAND]  # noqa: SLF001

    def dispatch_and_take() -> None:
        opened.order = type(opened.order)()  # sequence 0 again each time
        registry.dispatch(data)
        stream._inbox.take_nowait()  # noqa: SLF001 - the reader's side, without a loop

    timed: dict[str, Callable[[], object]] = {
        "runner: frame a step's tokens": lambda: encode([step]),
        "node: read the frame (unpickle, check)": lambda: reader.feed(frame),
        "node: merge into a chunk (coalesce)": lambda: coalesce(batch),
        "node: data-plane envelope": lambda: envelope(chunk, 1),
        "node: stream dispatch and take": dispatch_and_take,
        "node: OpenAI SSE event": lambda: render(chunk.text),
    }
    return {name: round(min(timeit.repeat(call, number=number, repeat=repeat))
                        / number * 1e6, 2) for name, call in timed.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    number, repeat = (2000, 5) if args.quick else (10000, 9)
    result = pieces(number, repeat)
    for name, micros in result.items():
        print(f"{name:42s} {micros:7.2f} µs")
    print(f"{'total':42s} {sum(result.values()):7.2f} µs")
    write_result("per_token_pieces", {"microseconds": result,
                                      "total": round(sum(result.values()), 2)})
    return 0


if __name__ == "__main__":
    sys.exit(main())
