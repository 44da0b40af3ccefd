"""Per-turn latency of a long conversation: a server-side session vs resending the history.

One real node serves `smollm2-135m`. Two conversations of N turns run one after the other
(never together), each turn asking for a short greedy reply, with one unrelated request
between turns (as other users would send): (a) a session (`skulk.client`): the history
stays on the server and the runner restores the session's KV cache, so each turn prefills
only the new message; (b) stateless `/v1/chat/completions` with the whole history each
turn: the unrelated request has replaced the cache, so each turn prefills everything.
Prints time to first token of turn 2 and turn N for both, and their ratios.

    .venv/bin/python bench/session_turns.py [--turns 50] [--max-tokens 12]
"""

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.node_process import NodeProcess  # noqa: E402

from skulk.client import Client  # noqa: E402

SYSTEM = "You are a helpful assistant. Answer briefly."
QUESTIONS = ["Name a fruit.", "Name a colour.", "Name an animal.", "Name a country.",
             "Name a tool."]


def distract(url: str) -> None:
    httpx.post(f"{url}/v1/chat/completions", timeout=120, json={
        "model": "smollm2-135m", "max_tokens": 2, "temperature": 0,
        "messages": [{"role": "user", "content": "Say hello to someone else entirely."}]})


def first_token_seconds(url: str, path: str, body: dict[str, object]) -> tuple[float, str]:
    started = time.perf_counter()
    first: float | None = None
    text = []
    with httpx.stream("POST", f"{url}{path}", json=body, timeout=120) as reply:
        reply.raise_for_status()
        for line in reply.iter_lines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            first = first or time.perf_counter()
            event = json.loads(line[6:])
            if event.get("choices"):
                text.append(event["choices"][0]["delta"].get("content") or "")
    assert first is not None
    return first - started, "".join(text)


def with_session(url: str, turns: int, max_tokens: int) -> list[float]:
    ttfts = []
    with Client(url) as client, client.create_session("smollm2-135m", system=SYSTEM) as s:
        for turn in range(turns):
            s.append(messages=[{"role": "user", "content": QUESTIONS[turn % len(QUESTIONS)]}])
            distract(url)
            seconds, _ = first_token_seconds(url, f"/v1/sessions/{s.session_id}/generate",
                                             {"max_tokens": max_tokens, "stream": True})
            ttfts.append(seconds)
        print(f"  session: {s.info().context_tokens} tokens of context after {turns} turns",
              file=sys.stderr)
    return ttfts


def stateless(url: str, turns: int, max_tokens: int) -> list[float]:
    ttfts = []
    history: list[dict[str, str]] = [{"role": "system", "content": SYSTEM}]
    for turn in range(turns):
        history.append({"role": "user", "content": QUESTIONS[turn % len(QUESTIONS)]})
        distract(url)
        seconds, reply = first_token_seconds(url, "/v1/chat/completions", {
            "model": "smollm2-135m", "messages": history, "max_tokens": max_tokens,
            "temperature": 0, "stream": True})
        history.append({"role": "assistant", "content": reply})
        ttfts.append(seconds)
    return ttfts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=50)
    parser.add_argument("--max-tokens", type=int, default=12)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as home:
        node = NodeProcess(Path(home), "--serve", "smollm2-135m").start()
        try:
            node.wait_model_ready()
            session = with_session(node.url, args.turns, args.max_tokens)
            baseline = stateless(node.url, args.turns, args.max_tokens)
        finally:
            node.stop()
    n = args.turns
    print(f"{'time to first token':<28}{'session':>12}{'resend history':>16}{'ratio':>8}")
    for label, index in (("turn 2", 1), (f"turn {n}", n - 1)):
        print(f"{label:<28}{session[index] * 1000:>10.1f}ms{baseline[index] * 1000:>14.1f}ms"
              f"{session[index] / baseline[index]:>8.2f}")
    last5 = statistics.median(session[-5:])
    print(f"{'session: turn ' + str(n) + ' / turn 2':<28}{session[-1] / session[1]:>12.2f}"
          f"   (median of last 5 turns / turn 2: {last5 / session[1]:.2f})")
    print(f"{'resend: turn ' + str(n) + ' / turn 2':<28}{baseline[-1] / baseline[1]:>12.2f}")


if __name__ == "__main__":
    main()
