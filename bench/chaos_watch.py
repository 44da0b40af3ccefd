"""Watching which master each live node follows, twice a second, while a soak runs.

Two measures, from one sweep of every live node's `/cluster` per poll:
- two masters: two or more live nodes each say they are the master (two seats taken, the
  split a cluster must never show);
- disagreement: live nodes name different masters (an election round still moving through
  the cluster, or a split); its longest unbroken run is reported. A node that has not yet
  seen its first round (no master) is left out of both.
"""

import threading
import time
from collections.abc import Callable

import httpx

POLL_SECONDS = 0.5


class ClusterWatch:
    def __init__(self, live: Callable[[], list[tuple[str, str]]],
                 interval: float = POLL_SECONDS) -> None:
        """`live`: (node id, API URL) of each node up now."""
        self._live = live
        self._interval = interval
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self.polls = 0
        self.two_masters_seconds = 0.0
        self.longest_disagreement_seconds = 0.0
        self._disagreeing_since: float | None = None
        self._latest: dict[str, str] = {}  # node id -> the master it named last

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        if self._thread.is_alive():
            self._thread.join(10)

    def latest_master(self) -> str | None:
        """The master most live nodes named in the last poll."""
        named = list(self._latest.values())
        return max(set(named), key=named.count) if named else None

    def _run(self) -> None:
        with httpx.Client(timeout=2.0) as client:
            while not self._stopping.wait(self._interval):
                self.record(self._sweep(client), time.monotonic())

    def _sweep(self, client: httpx.Client) -> dict[str, str]:
        named: dict[str, str] = {}
        for node_id, url in self._live():
            try:
                master = client.get(f"{url}/cluster").json()["master_node_id"]
            except (httpx.HTTPError, ValueError, KeyError):
                continue  # starting or just killed: it speaks for nobody
            if master is not None:
                named[node_id] = master
        return named

    def record(self, named: dict[str, str], now: float) -> None:
        """One poll's view: each responding node and the master it names."""
        self.polls += 1
        self._latest = named
        if sum(1 for node, master in named.items() if node == master) > 1:
            self.two_masters_seconds += self._interval
        if len(set(named.values())) > 1:
            if self._disagreeing_since is None:
                self._disagreeing_since = now
            self.longest_disagreement_seconds = max(
                self.longest_disagreement_seconds,
                now - self._disagreeing_since + self._interval)
        else:
            self._disagreeing_since = None
