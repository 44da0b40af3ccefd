"""The event log's fsyncs, on a thread of their own that the appending loop does not wake
while appends keep coming.

Waking a sleeping thread costs the waker a system call and a hand-off of the interpreter
lock: 50-90 us of the master's loop per wake on loaded cores, once per event when events
come further apart than the sync interval. So the thread wakes itself: while appends keep
coming it looks every `interval` and syncs what was written since; `LINGER_SECONDS`
after the last append it sleeps until the next append wakes it (the one wake a quiet spell
costs). A record is synced within `interval` of its append, as with syncing at the first
append past the interval, and the loop only sets a flag.
"""

import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

# Polling stops this long after the last append.
LINGER_SECONDS = 2.0
# The shortest look (a zero interval, in tests, would spin).
_SHORTEST_WAIT = 0.001


class LogSyncer:
    """fsyncs one descriptor (swapped when the live file is) on its own thread."""

    def __init__(self, interval: float) -> None:
        self._interval = max(interval, _SHORTEST_WAIT)
        # Held by an fsync and by a descriptor swap (reentrant: a swap that fails degrades
        # the log, which closes the file under it again).
        self._lock = threading.RLock()
        self._wake = threading.Event()
        self._fd: int | None = None
        self._dirty = False  # a record written since the last fsync began
        self._polling = False  # the thread looks by itself: no wake needed
        self._stopped = False
        self._thread: threading.Thread | None = None
        self.error: OSError | None = None  # the first failed fsync, for the log to degrade

    def written(self, fd: int) -> None:
        """A record was handed to the OS on `fd`: sync it within the interval."""
        self._fd = fd
        self._dirty = True
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="event-log-sync",
                                            daemon=True)
            self._thread.start()
        if not self._polling:  # read after `_dirty` is set: see `_run`
            self._wake.set()

    @contextmanager
    def replacing(self) -> Iterator[None]:
        """While the descriptor is closed or replaced: no fsync runs (one running now is
        waited for), and nothing written before is synced after."""
        with self._lock:
            self._fd = None
            self._dirty = False
            yield

    def stop(self) -> None:
        """End the thread after any fsync running now (nothing pending is synced)."""
        self._stopped = True
        self._wake.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join()

    def _run(self) -> None:
        last_write = time.monotonic()
        while True:
            self._wake.wait(self._interval if self._polling else None)
            self._wake.clear()
            if self._stopped:
                return
            now = time.monotonic()
            if self._dirty:
                self._dirty = False
                last_write = now
                self._polling = True
                self._sync()
            elif now - last_write > LINGER_SECONDS:
                self._polling = False
                if self._dirty:  # set before the append read `_polling`: it did not wake us
                    self._polling = True

    def _sync(self) -> None:
        with self._lock:
            fd = self._fd
            if fd is None or self.error is not None:
                return
            try:
                os.fsync(fd)
            except OSError as error:
                self.error = error
