"""bench/relay_wakes.py's stand-ins: a token's messages frame as ggml RPC's, and a short
run through the real relays on loopback reads each relay's CPU and wake-ups per token."""

import sys
from collections.abc import Sequence
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPOSITORY))

from bench.relay_wakes import BATCH, GET_TENSOR, READ_RESULT, one_run  # noqa: E402

from skulk.testing.ports import free_port  # noqa: E402


def commands(stream: bytes) -> list[tuple[int, int]]:
    """(id, payload size) of each ggml RPC command in `stream`, which must end with one."""
    found, at = [], 0
    while at < len(stream):
        size = int.from_bytes(stream[at + 1:at + 9], "little")
        found.append((stream[at], size))
        at += 9 + size
    assert at == len(stream)
    return found


def test_a_token_is_eight_commands_then_the_read_of_the_result() -> None:
    batch = commands(BATCH)
    assert len(batch) == 8 and sum(9 + size for _, size in batch) == len(BATCH)
    assert 7000 < len(BATCH) < 8000  # llama_rpc.py counted 7,676 B per token
    assert commands(READ_RESULT) == [(GET_TENSOR, 24)]


def test_a_short_hot_run_reads_both_relays_cpu_and_wake_ups() -> None:
    def pinned(core: int, argv: Sequence[str]) -> list[str]:
        return ["taskset", "-c", str(core), *argv]

    figures = one_run(pinned, "127.0.0.1", tokens=50, sweeps=0, one_send=False,
                      ports=(free_port(), free_port()))
    for relay in ("relay", "forwarder"):
        # A token wakes each relay about twice (its command, its reply); a relay that
        # lost its core mid-token may find the next message there without sleeping.
        assert 0.5 <= figures[f"{relay}_wakes"] <= 6.0
        assert 0 < figures[f"{relay}_cpu_us"] < 5000
    assert figures["wall_us"] > 0
