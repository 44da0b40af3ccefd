"""One request on its own over an engine's batch, written once for every engine: its
warm-up and tests run a request this way; the runner never does (it submits and steps).

The engine submits the request to its batch as it would any other, then iterates
`RequestAlone.stream`, which steps the batch until that request ends. Other requests'
events met meanwhile are kept, and the engine hands them out first from its next `step`.
"""

import itertools
from collections.abc import Callable, Iterator

from skulk.shared.types.chunks import ErrorChunk, TokenChunk
from skulk.shared.types.ids import TaskId
from skulk.worker.engines.protocol import EngineEvent, TaskDone, TaskOutput


class RequestFailed(RuntimeError):
    """The request ended with an error chunk or a failed status; the message is its own."""


class RequestAlone:
    """Runs one request at a time to its end over `step`; `cancel` stops one closed early."""

    def __init__(self, step: Callable[[], list[EngineEvent]],
                 cancel: Callable[[TaskId], None]) -> None:
        self._step = step
        self._cancel = cancel
        self._held: list[EngineEvent] = []
        self._ids = itertools.count()
        self.last_done: TaskDone | None = None
        """How the last request run alone ended (None until one has)."""

    def new_task_id(self) -> TaskId:
        """An id of the engine's own, apart from the runner's task ids."""
        return TaskId(f"generate-{next(self._ids)}")

    @property
    def holding(self) -> bool:
        """Other requests' events wait for the engine's next `step`."""
        return bool(self._held)

    def take_held(self) -> list[EngineEvent]:
        """The other requests' events met while one ran alone, in order; now handed out."""
        held, self._held = self._held, []
        return held

    def stream(self, task_id: TaskId) -> Iterator[TokenChunk]:
        """The chunks of the submitted request `task_id`, stepping until it ends. Raises
        `RequestFailed` when it fails; closing the iterator early cancels it (it leaves the
        batch at the engine's next step)."""
        ended: TaskDone | None = None
        failure: str | None = None
        try:
            while ended is None:
                for event in self._step():
                    if event.task_id != task_id:
                        self._held.append(event)
                    elif isinstance(event, TaskOutput):
                        if isinstance(event.chunk, ErrorChunk):
                            failure = event.chunk.message
                        else:
                            yield event.chunk
                    elif isinstance(event, TaskDone):
                        ended = self.last_done = event
            if failure is not None or ended.status == "failed":
                raise RequestFailed(failure or ended.error or f"request {task_id} failed")
        finally:
            if ended is None:
                self._cancel(task_id)
