"""The replica's listener stream: what waits is handed out without a turn, 16 at most in a
row; nothing is lost to a cancelled wait; a closed reader breaks the sender."""

import anyio
import anyio.lowlevel
import pytest

from skulk.shared.listener_stream import MOST_WITHOUT_TURN, ListenerStream


class TurnCounter:
    """Counts the loop's turns while it runs beside the code under test."""

    def __init__(self) -> None:
        self.turns = 0

    async def run(self) -> None:
        while True:
            self.turns += 1
            await anyio.lowlevel.checkpoint()


@pytest.mark.anyio
async def test_what_waits_is_taken_without_a_turn_sixteen_at_most_in_a_row() -> None:
    stream = ListenerStream[int]()
    counter = TurnCounter()
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(counter.run)
        await anyio.lowlevel.checkpoint()
        for item in range(MOST_WITHOUT_TURN + 4):
            stream.send_nowait(item)
        before = counter.turns
        taken = [await stream.receive() for _ in range(MOST_WITHOUT_TURN)]
        assert counter.turns == before, "what was there came without a turn"
        taken.append(await stream.receive())
        assert counter.turns == before + 1, "the 17th in a row waits one turn"
        taken += [await stream.receive() for _ in range(3)]
        tasks.cancel_scope.cancel()
    assert taken == list(range(MOST_WITHOUT_TURN + 4))


@pytest.mark.anyio
async def test_a_reader_waits_for_the_next_item_and_a_cancelled_wait_loses_nothing() -> None:
    stream = ListenerStream[str]()
    with anyio.move_on_after(0.02) as waited:
        await stream.receive()
    assert waited.cancelled_caught
    received: list[str] = []

    async def read_two() -> None:
        async with stream:
            async for item in stream:
                received.append(item)
                if len(received) == 2:
                    return

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(read_two)
        await anyio.sleep(0.01)
        stream.send_nowait("a")
        await anyio.sleep(0.01)
        stream.send_nowait("b")
    assert received == ["a", "b"]
    with pytest.raises(anyio.BrokenResourceError):
        stream.send_nowait("c")  # the reader left: the replica drops this listener


@pytest.mark.anyio
async def test_closing_ends_a_waiting_iteration_and_receive_nowait_says_what_there_is() -> None:
    stream = ListenerStream[int]()
    with pytest.raises(anyio.WouldBlock):
        stream.receive_nowait()
    stream.send_nowait(1)
    assert stream.receive_nowait() == 1
    ended = anyio.Event()

    async def iterate() -> None:
        async for _ in stream:
            pass
        ended.set()

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(iterate)
        await anyio.sleep(0.01)
        stream.close()
        with anyio.fail_after(1):
            await ended.wait()
    with pytest.raises(anyio.ClosedResourceError):
        stream.receive_nowait()
