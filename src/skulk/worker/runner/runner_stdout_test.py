import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager

import anyio
import pytest
from loguru import logger

from skulk.worker.runner.runner_stdout import RunnerStdout


@contextmanager
def logged_at_debug() -> Iterator[list[str]]:
    said: list[str] = []
    sink = logger.add(lambda message: said.append(message.record["message"]), level="DEBUG")
    try:
        yield said
    finally:
        logger.remove(sink)


@pytest.mark.anyio
async def test_what_a_process_prints_from_c_is_logged_by_line_at_debug() -> None:
    read_end, write_end = os.pipe()
    # A child that writes to its descriptor 1 below Python, as ggml's RPC server does.
    script = ("import os; os.write(1, b'Starting RPC server v7.0.0\\n'); "
              "os.write(1, b'Accepted client connection\\nClient conn'); "
              "os.write(1, b'ection closed')")
    with logged_at_debug() as said:
        printed = RunnerStdout(read_end, "runner-1")
        child = subprocess.Popen([sys.executable, "-c", script], stdout=write_end)
        os.close(write_end)
        await anyio.to_thread.run_sync(child.wait)
        with anyio.fail_after(10):
            while len(said) < 3:
                await anyio.sleep(0.01)
        printed.close()
    assert said == ["runner runner-1: Starting RPC server v7.0.0",
                    "runner runner-1: Accepted client connection",
                    "runner runner-1: Client connection closed"]
