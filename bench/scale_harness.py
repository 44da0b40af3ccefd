"""N whole nodes on one in-memory bus in one process, with the accounting bench/scale.py
reports: every event-loop step's CPU charged to the node whose task ran it, and every
publication counted by topic.

A node here is the real `Node` (router, signatures, replica, election, master seat,
readings), with its API and worker off: the control plane alone. The accounting:

- `StepClock` wraps asyncio's `Handle._run` (a plain asyncio loop, not uvloop) and charges
  each step's thread CPU time to the node named by the `NODE` context variable the step
  runs in; every task a node starts inherits it. The longest step a node ran is the least
  its own event loop would lag were it alone on one.
- `PlainTransport` is the memory transport without its extra yield before a publication
  to other nodes: the router yields before every publication, and Zenoh's transport adds
  none, so the in-memory one would charge the publisher a step per message a real node
  does not take.
- `CountingBus` counts publications, deliveries (one per matching subscription) and bytes
  by topic, and the CPU the bus spends fanning a publication out, which Zenoh would spend
  in its own threads, not on the publisher's loop: it is reported apart. Making the
  payload (encoding and sealing it) is the publisher's own work and is not fan-out; nor
  is a collector's pause that fell in a fan-out (the step it fell in left it out too).
"""

import asyncio
import contextvars
import gc
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import anyio.abc

from skulk.node import Node
from skulk.node_config import NodeConfig
from skulk.routing.keys import key_matches
from skulk.routing.memory import MemoryBus, MemoryTransport
from skulk.routing.queue_subscription import QueueSubscription
from skulk.routing.transport import Message
from skulk.shared.types.ids import NodeId

NODE: contextvars.ContextVar[str | None] = contextvars.ContextVar("scale_node", default=None)
BUS = "(bus fan-out)"


class StepClock:
    """CPU seconds per node, and the longest single step each node ran.

    The garbage collector's pauses are taken out of the step they fell in and kept apart:
    one process holding N nodes has N nodes' heap to walk, which one node does not.
    """

    def __init__(self) -> None:
        self.busy: defaultdict[str, float] = defaultdict(float)
        # The same by (node, task name): anyio names a task after its function.
        self.busy_by_task: defaultdict[tuple[str, str], float] = defaultdict(float)
        self.longest: dict[str, float] = {}
        self.longest_task: dict[str, str] = {}  # the task that ran each node's longest step
        self.longest_gc_pause = 0.0
        self._original: Callable[[asyncio.Handle], None] | None = None
        self._gc_started = 0.0
        self._gc_spent = 0.0

    def _gc_phase(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._gc_started = time.thread_time()
        else:
            pause = time.thread_time() - self._gc_started
            self._gc_spent += pause
            self.longest_gc_pause = max(self.longest_gc_pause, pause)

    def install(self) -> None:
        original = asyncio.events.Handle._run
        self._original = original
        busy, longest, by_task = self.busy, self.longest, self.busy_by_task
        longest_task = self.longest_task
        gc.callbacks.append(self._gc_phase)

        def timed(handle: asyncio.Handle) -> None:
            gc_before = self._gc_spent
            started = time.thread_time()
            original(handle)
            spent = time.thread_time() - started - (self._gc_spent - gc_before)
            context: contextvars.Context = handle._context  # type: ignore[attr-defined]
            node = context.get(NODE) or "(harness)"
            busy[node] += spent
            task = getattr(handle._callback, "__self__", None)  # type: ignore[attr-defined]
            name = task.get_name() if isinstance(task, asyncio.Task) else "(callback)"
            by_task[node, name] += spent
            if spent > longest.get(node, 0.0):
                longest[node] = spent
                longest_task[node] = name

        asyncio.events.Handle._run = timed  # type: ignore[method-assign,assignment]

    def uninstall(self) -> None:
        if self._gc_phase in gc.callbacks:
            gc.callbacks.remove(self._gc_phase)
        if self._original is not None:
            asyncio.events.Handle._run = self._original  # type: ignore[method-assign,assignment]
            self._original = None

    @property
    def gc_spent(self) -> float:
        """The collector's pauses so far, in thread CPU seconds."""
        return self._gc_spent

    def reset_longest(self) -> None:
        self.longest.clear()
        self.longest_gc_pause = 0.0


def topic_of(key: str) -> str:
    """`skulk/<fingerprint>/<topic>[/...]` -> topic (`members` for liveliness)."""
    parts = key.split("/")
    return parts[2] if len(parts) > 2 else key


@dataclass
class Traffic:
    publications: Counter[str] = field(default_factory=Counter)
    deliveries: Counter[str] = field(default_factory=Counter)
    delivered_bytes: Counter[str] = field(default_factory=Counter)

    def copy(self) -> "Traffic":
        return Traffic(Counter(self.publications), Counter(self.deliveries),
                       Counter(self.delivered_bytes))

    def since(self, earlier: "Traffic") -> "Traffic":
        return Traffic(self.publications - earlier.publications,
                       self.deliveries - earlier.deliveries,
                       self.delivered_bytes - earlier.delivered_bytes)


class CountingBus(MemoryBus):
    """A `MemoryBus` that counts what it carries and times its own fan-out."""

    def __init__(self, clock: StepClock) -> None:
        super().__init__()
        self.traffic = Traffic()
        # CPU each node's publications cost the bus (inside that node's steps), by task.
        self.fan_out: defaultdict[tuple[str, str], float] = defaultdict(float)
        self._clock = clock
        # Which subscriptions match a key, kept per key until a subscription comes or goes.
        self._matching: dict[str, list[QueueSubscription]] = {}

    def attach(self, key_expr: str, subscription: QueueSubscription) -> None:
        self._matching.clear()
        super().attach(key_expr, subscription)

    def detach(self, subscription: QueueSubscription) -> None:
        self._matching.clear()
        super().detach(subscription)

    def deliver(self, message: Message) -> None:
        self._fan_out(message.key, lambda: message.payload, ())

    def deliver_to_others(self, key: str, payload: Callable[[], bytes],
                          own: list[QueueSubscription]) -> None:
        self._fan_out(key, payload, own)

    def _fan_out(self, key: str, payload: Callable[[], bytes],
                 skipped: Sequence[QueueSubscription]) -> None:
        started, gc_before = time.thread_time(), self._clock.gc_spent
        made = 0.0  # the publisher's own: encoding and sealing the payload
        subscribers = self._matching.get(key)
        if subscribers is None:
            subscribers = self._matching[key] = [
                subscription for key_expr, subscription in self._subscriptions
                if key_matches(key_expr, key)]
        receivers = [s for s in subscribers if s not in skipped] if skipped else subscribers
        if receivers:
            making = time.thread_time()
            message = Message(key, payload())
            made = time.thread_time() - making
            for subscription in receivers:
                subscription.put(message)
            topic = topic_of(key)
            self.traffic.publications[topic] += 1
            self.traffic.deliveries[topic] += len(receivers)
            self.traffic.delivered_bytes[topic] += len(receivers) * len(message.payload)
        spent = time.thread_time() - started - made - (self._clock.gc_spent - gc_before)
        self._clock.busy[BUS] += spent
        task = asyncio.current_task()
        self.fan_out[NODE.get() or "(harness)", task.get_name() if task else "(callback)"
                      ] += spent


class PlainTransport(MemoryTransport):
    """Publishes to other nodes without a yield of its own, as Zenoh's transport does."""

    async def publish_remote(self, key: str, payload: Callable[[], bytes]) -> None:
        self._check_open()
        self._bus.deliver_to_others(key, payload, self._own)


@dataclass
class Member:
    name: str
    node: Node
    scope: anyio.CancelScope
    transport: MemoryTransport
    stopped: anyio.Event


class ScaleCluster:
    """Starts, kills and watches whole nodes on one `CountingBus`."""

    def __init__(self, tasks: anyio.abc.TaskGroup, root: Path, clock: StepClock,
                 election_timeout: float) -> None:
        self.bus = CountingBus(clock)
        self.clock = clock
        self.members: dict[str, Member] = {}
        self._tasks = tasks
        self._root = root
        self._election_timeout = election_timeout

    def start(self, name: str) -> Member:
        """Start node `name` (API and worker off); it runs until killed."""
        transport = PlainTransport(self.bus)
        node = Node(NodeConfig(data_dir=self._root / name, namespace="scale", run_api=False,
                               run_worker=False, insecure=True, auto_place=False,
                               election_timeout=self._election_timeout), transport)
        scope = anyio.CancelScope()
        stopped = anyio.Event()

        async def run() -> None:
            try:
                with scope:
                    await node.run()
            finally:
                stopped.set()

        with _as_node(name):
            self._tasks.start_soon(run, name=f"node {name}")
        member = self.members[name] = Member(name, node, scope, transport, stopped)
        return member

    async def kill(self, name: str) -> None:
        """Stop the node's tasks, then close its transport (its liveliness token goes): a
        transport closed under a task still publishing would fail that task instead."""
        member = self.members.pop(name)
        member.scope.cancel()
        await member.stopped.wait()
        await member.transport.close()

    def name_of(self, node_id: NodeId) -> str:
        return next(m.name for m in self.members.values() if m.node.node_id == node_id)

    def converged_master(self) -> NodeId | None:
        """The master every running node elected and follows, all in its session; None
        while they disagree."""
        nodes = [m.node for m in self.members.values()]
        if not nodes or any(not n.ready.is_set() for n in nodes):
            return None
        masters = {n.master_node for n in nodes}
        if len(masters) != 1:
            return None
        master = next(iter(masters))
        if master is None or master not in {n.node_id for n in nodes}:
            return None
        if any(n.replica.master_node != master for n in nodes):
            return None
        sessions = {n.replica.session for n in nodes}
        return master if len(sessions) == 1 and None not in sessions else None

    async def wait_converged(self, timeout: float) -> NodeId:
        with anyio.fail_after(timeout):
            while (master := self.converged_master()) is None:
                await anyio.sleep(0.01)
        return master


@contextmanager
def _as_node(name: str) -> Iterator[None]:
    token = NODE.set(name)
    try:
        yield
    finally:
        NODE.reset(token)
