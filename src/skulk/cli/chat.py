"""`skulk chat`: an interactive streaming chat with a model, in the terminal.

Each reply is capped (`--max-tokens`): a small model can loop for minutes otherwise, and
a reply cut by the cap ends with a marker saying so. While a reply streams, what the user
types is neither echoed into it nor kept for the next prompt; Ctrl-C stops the reply.
"""

import argparse
import json
import sys
import termios
from collections.abc import Iterator
from contextlib import contextmanager

import httpx

from skulk.cli.argument_types import at_most, non_negative_number, positive_int
from skulk.cli.node_http import NodeUnreachable, auth_headers, print_error

DEFAULT_MODEL = "smollm2-135m"
DEFAULT_MAX_TOKENS = 512
DEFAULT_TEMPERATURE = 0.7
MAX_TEMPERATURE = 2.0
INTERRUPTED = 130


def add_chat_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = ("Chat with a model through a running node: type a message, read "
                          "the streamed reply. An empty line or Ctrl-D ends the chat; Ctrl-C "
                          "stops a reply.")
    parser.add_argument("model", nargs="?", default=DEFAULT_MODEL,
                        help=f"a model id or alias (default {DEFAULT_MODEL}, the bundled "
                             "model); it is placed first if nothing serves it")
    parser.add_argument("--max-tokens", type=positive_int, default=DEFAULT_MAX_TOKENS,
                        metavar="N",
                        help=f"the most tokens one reply may take (default "
                             f"{DEFAULT_MAX_TOKENS}); a reply cut there ends with a marker")
    parser.add_argument("--temperature", type=at_most(MAX_TEMPERATURE, non_negative_number),
                        default=DEFAULT_TEMPERATURE,
                        help=f"sampling temperature, 0 to {MAX_TEMPERATURE:g}: 0 always "
                             f"picks the likeliest token (default {DEFAULT_TEMPERATURE})")


def chat(url: str, model: str, max_tokens: int, temperature: float) -> int:
    """An interactive streaming chat; an empty line or Ctrl-D ends it."""
    messages: list[dict[str, str]] = []
    print(f"chatting with {model}; empty line or Ctrl-D to quit, Ctrl-C stops a reply")
    while True:
        try:
            line = input("> ").strip()
        except EOFError:
            return 0
        except KeyboardInterrupt:
            print()
            return INTERRUPTED
        if not line:
            return 0
        messages.append({"role": "user", "content": line})
        with _typing_hidden():
            reply = _stream_reply(url, model, messages, max_tokens, temperature)
        if reply is None:
            messages.pop()
            continue
        messages.append({"role": "assistant", "content": reply})


def cut_marker(max_tokens: int) -> str:
    return f"[cut at --max-tokens {max_tokens}; raise it for longer replies]"


def _stream_reply(url: str, model: str, messages: list[dict[str, str]], max_tokens: int,
                  temperature: float) -> str | None:
    """The reply as it streams; None when the node refused it or the user stopped it."""
    body = {"model": model, "messages": messages, "stream": True,
            "max_tokens": max_tokens, "temperature": temperature}
    parts: list[str] = []
    finish: str | None = None
    try:
        with httpx.stream("POST", f"{url}/v1/chat/completions", json=body,
                          headers=auth_headers(),
                          timeout=httpx.Timeout(600.0, connect=5.0)) as response:
            if response.status_code != 200:
                response.read()
                print_error(response)
                return None
            for line in response.iter_lines():
                if not line.startswith("data: ") or line == "data: [DONE]":
                    continue
                event = json.loads(line[len("data: "):])
                if "error" in event:
                    print(f"\nskulk: {event['error']['message']}", file=sys.stderr)
                    return None
                for choice in event.get("choices", []):
                    text = choice.get("delta", {}).get("content") or ""
                    parts.append(text)
                    print(text, end="", flush=True)
                    finish = choice.get("finish_reason") or finish
    except httpx.TransportError as error:
        raise NodeUnreachable(f"lost the node at {url}: {error}") from error
    except KeyboardInterrupt:
        print("\n[stopped]")  # leaving the stream closes it, which cancels the request
        return None
    print()
    if finish == "length":
        print(cut_marker(max_tokens))
    return "".join(parts)


@contextmanager
def _typing_hidden() -> Iterator[None]:
    """While a reply streams, keystrokes are not echoed, and what was typed meanwhile is
    dropped after (else it shows inside the reply, then again as the next message)."""
    if not sys.stdin.isatty():
        yield
        return
    fd = sys.stdin.fileno()
    saved = termios.tcgetattr(fd)
    quiet = list(saved)
    quiet[3] &= ~termios.ECHO  # the local modes
    termios.tcsetattr(fd, termios.TCSANOW, quiet)
    try:
        yield
    finally:
        termios.tcflush(fd, termios.TCIFLUSH)
        termios.tcsetattr(fd, termios.TCSANOW, saved)
