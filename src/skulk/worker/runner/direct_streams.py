"""Local streams whose plain tokens a runner's relay writes to the client's socket itself.

With the relay on (`RunnerOutput(relay=True)`), a thread of the native core reads the
runner's pipe instead of the event loop: a step's plain tokens for a stream made direct go
straight to its socket as server-sent events, and everything else reaches the supervisor
as before, in order. The supervisor offers each task it runs for a stream on this node
to the node's `DirectStreams` (its worker's); the API makes its stream direct once the
response is under way (`DirectStreams.go_direct`) and takes it back, with what the relay
delivered and what it could not send, before it writes anything else
(`DirectStream.take_back`). The node's Python is then not woken per token.
"""

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from skulk._native import Relay
from skulk.shared.types.ids import TaskId
from skulk.worker.runner.messages import TokensProduced


@dataclass(frozen=True)
class Released:
    """A direct stream taken back: the tokens the relay delivered (whole events, or the
    end of one in `unsent`, which must be written first), the text and tokens it could
    not send yet (the client read slowly; one delta for the Python path), whether the
    client was gone, how many events it wrote, and the gaps between the tokens (s)."""

    written_tokens: list[int]
    pending_text: str
    pending_tokens: list[int]
    unsent: bytes
    gone: bool
    events: int
    gaps: list[float]


class DirectStream:
    """A stream the relay writes now; `take_back` ends that (once; later calls: None)."""

    def __init__(self, relay: Relay, task_id: TaskId) -> None:
        self._relay = relay
        self.task_id = task_id
        self._released = False

    def take_back(self) -> Released | None:
        if self._released:
            return None
        self._released = True
        back = self._relay.release(self.task_id)
        return None if back is None else Released(*back)

    def heard_at(self) -> float:
        """`time.monotonic()` of the runner's last output (its tokens count as progress)."""
        return self._relay.heard_at()


class TaskRelay:
    """What the supervisor offers for one task: its relay, how many of the task's pieces
    the supervisor has handed to the stream so far, and how to tell the runner that the
    task's first token went out (`first_token_pause`)."""

    def __init__(self, relay: Relay, task_id: TaskId, handled: Callable[[], int],
                 first_token_out: Callable[[], None]) -> None:
        self.relay = relay
        self._task_id = task_id
        self._handled = handled
        self.first_token_out = first_token_out

    def go_direct(self, socket_fd: int, head: bytes, tail: bytes) -> DirectStream | None:
        if self.relay.activate(self._task_id, self._handled(), socket_fd, head, tail):
            return DirectStream(self.relay, self._task_id)
        return None


class DirectStreams:
    """A node's tasks that may go direct, by task: its supervisors offer them, its API
    makes their streams direct."""

    def __init__(self) -> None:
        self._offered: dict[TaskId, TaskRelay] = {}

    def offer(self, task_id: TaskId, task_relay: TaskRelay) -> None:
        self._offered[task_id] = task_relay

    def withdraw(self, task_id: TaskId) -> None:
        self._offered.pop(task_id, None)

    def first_token_out(self, task_id: TaskId) -> None:
        """The task's first token went out to its client: its runner, which may wait for
        this (`first_token_pause`), steps on."""
        task_relay = self._offered.get(task_id)
        if task_relay is not None:
            task_relay.first_token_out()

    def writing(self) -> int:
        """Streams the relays of the offered tasks' runners write now."""
        relays = {id(offered.relay): offered.relay for offered in self._offered.values()}
        return sum(relay.direct_streams() for relay in relays.values())

    def go_direct(self, task_id: TaskId, socket_fd: int, head: bytes,
                  tail: bytes) -> DirectStream | None:
        """Make the task's stream direct, writing to `socket_fd` (the relay keeps its own
        duplicate), when its runner has a relay and every piece it passed on was handed
        to the stream already; None leaves the stream on the Python path (try again
        later)."""
        task_relay = self._offered.get(task_id)
        return None if task_relay is None else task_relay.go_direct(socket_fd, head, tail)


class RunnerRelay:
    """A supervisor's side of its runner's relay: offers the tasks whose streams are on
    this node to `streams`, counts each task's pieces it handed on (what `go_direct`
    compares with the relay's), passes on that a task's first token went out
    (`first_token_out`, the runner's message), and forgets a task at its end."""

    def __init__(self, relay: Relay, streams: DirectStreams,
                 first_token_out: Callable[[TaskId], None]) -> None:
        self.relay = relay
        self._streams = streams
        self._first_token_out = first_token_out
        self._pieces: dict[TaskId, int] = {}

    def offer(self, task_id: TaskId) -> None:
        self._streams.offer(task_id, TaskRelay(
            self.relay, task_id, lambda: self._pieces.get(task_id, 0),
            lambda: self._first_token_out(task_id)))

    def count(self, batch: Sequence[object]) -> None:
        """Note the pieces of a batch read from the relay, as the supervisor hands it on."""
        pieces = self._pieces
        for message in batch:
            if type(message) is TokensProduced:
                for task_id, *_ in message.pieces:
                    pieces[task_id] = pieces.get(task_id, 0) + 1

    def ended(self, task_id: TaskId) -> None:
        self._streams.withdraw(task_id)
        self.relay.forget(task_id)
        self._pieces.pop(task_id, None)
