"""`skulk chat`'s reply: streamed, capped with a visible marker, typing kept out of it."""

import json
import os
import pty
import select
import sys
import termios
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import pytest

from skulk.cli import chat as chat_command
from skulk.cli.main import build_parser, subcommands


class StreamedReply:
    """What `httpx.stream` gives: a 200 whose lines are server-sent events."""

    status_code = 200

    def __init__(self, events: list[dict[str, Any]]) -> None:
        self._lines = [f"data: {json.dumps(event)}" for event in events] + ["data: [DONE]"]

    def iter_lines(self) -> Iterator[str]:
        yield from self._lines


def streaming(monkeypatch: pytest.MonkeyPatch, pieces: list[str], finish: str,
              asked: list[dict[str, Any]]) -> None:
    events = [{"choices": [{"delta": {"content": p}, "finish_reason": None}]}
              for p in pieces] + [{"choices": [{"delta": {}, "finish_reason": finish}]}]

    @contextmanager
    def stream(method: str, url: str, **kwargs: Any) -> Iterator[StreamedReply]:
        asked.append(kwargs["json"])
        yield StreamedReply(events)

    monkeypatch.setattr(httpx, "stream", stream)


def test_a_reply_cut_by_the_limit_ends_with_a_marker(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    asked: list[dict[str, Any]] = []
    streaming(monkeypatch, ["Hello", " there"], "length", asked)
    reply = chat_command._stream_reply("http://n", "m", [{"role": "user", "content": "hi"}],
                                       max_tokens=2, temperature=0.0)
    assert reply == "Hello there" and asked[0]["max_tokens"] == 2
    assert capsys.readouterr().out == f"Hello there\n{chat_command.cut_marker(2)}\n"


def test_a_reply_that_ends_by_itself_has_no_marker(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    streaming(monkeypatch, ["Hi."], "stop", [])
    chat_command._stream_reply("http://n", "m", [], max_tokens=512, temperature=0.7)
    assert capsys.readouterr().out == "Hi.\n"


def test_help_describes_every_flag_with_its_default() -> None:
    text = subcommands(build_parser())["chat"].format_help()
    assert "Ctrl-C stops a reply" in text
    assert f"(default {chat_command.DEFAULT_MAX_TOKENS})" in text
    assert f"(default {chat_command.DEFAULT_TEMPERATURE})" in text
    assert f"default {chat_command.DEFAULT_MODEL}" in text


def test_typing_during_a_reply_is_not_echoed_and_then_dropped(
        monkeypatch: pytest.MonkeyPatch) -> None:
    master, slave = pty.openpty()
    try:
        with os.fdopen(slave, closefd=False) as terminal:
            monkeypatch.setattr(sys, "stdin", terminal)
            assert termios.tcgetattr(slave)[3] & termios.ECHO
            with chat_command._typing_hidden():
                assert not termios.tcgetattr(slave)[3] & termios.ECHO
                os.write(master, b"typed while the reply streams\n")
            assert termios.tcgetattr(slave)[3] & termios.ECHO
            readable, _, _ = select.select([slave], [], [], 0.2)
            assert readable == [], "what was typed meanwhile must not become the next line"
            echoed, _, _ = select.select([master], [], [], 0.0)
            assert echoed == [], "nothing was echoed into the reply"
    finally:
        os.close(master)
        os.close(slave)
