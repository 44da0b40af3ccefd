"""The Zenoh transport, and the only module that imports `zenoh`.

Peer mode, explicit listen/connect endpoints, multicast scouting off unless asked.
Publications are reliable with blocking congestion control, so one publisher's messages
arrive in order and none are dropped under load. Zenoh delivers a session's own
publications to its own subscribers, which is how a lone node talks to itself.
"""

import asyncio
import json
import os
import re
from collections.abc import Callable, Sequence

import anyio
from loguru import logger

# Zenoh's receive-side runtimes default to one or two threads. When a peer's link dies
# silently (a cable pulled, a partition), one of them stalls once the lease expires, and
# for ~9 s every other peer's messages wait behind it (delayed, not lost). Measured with
# three Zenoh peers on network namespaces publishing every 100 ms, cutting one: the two
# survivors stalled in 9 cuts of 10 by default, in 0 of 3 with these threads (more tx or
# net threads did not help). Must be set before Zenoh starts its runtimes.
os.environ.setdefault(
    "ZENOH_RUNTIME", "(rx: (worker_threads: 4), acc: (worker_threads: 4), "
    "app: (worker_threads: 4))")

import zenoh  # noqa: E402  (reads ZENOH_RUNTIME when its runtimes start)

from skulk.routing.queue_subscription import QueueSubscription
from skulk.routing.transport import ALIVE, GONE, Message, QueryHandler, TransportClosed
from skulk.shared.endpoints import tls_endpoint
from skulk.trust.files import TlsFiles

LEASE_MILLISECONDS = 4000


def _tls(config: zenoh.Config, tls: TlsFiles) -> None:
    """Mutual TLS: every link presents a certificate from the cluster's CA and checks the
    other side's. Host names are not checked: membership is the CA's signature."""
    config.insert_json5("transport/link/tls", json.dumps({
        "root_ca_certificate": str(tls.ca_certificate),
        "listen_private_key": str(tls.private_key),
        "listen_certificate": str(tls.certificate),
        "connect_private_key": str(tls.private_key),
        "connect_certificate": str(tls.certificate),
        "enable_mtls": True,
        "verify_name_on_connect": False,
    }))
    # Only TLS links: a plain TCP endpoint given by mistake must not open a side door.
    config.insert_json5("transport/link/protocols", json.dumps(["tls"]))


def _deny(config: zenoh.Config, certificate_names: Sequence[str]) -> None:
    """Refuse everything to and from links whose certificate names one of these nodes."""
    messages = ["put", "delete", "declare_subscriber", "query", "reply", "declare_queryable",
                "liveliness_token", "declare_liveliness_subscriber", "liveliness_query"]
    config.insert_json5("access_control", json.dumps({
        "enabled": True, "default_permission": "allow",
        "rules": [{"id": "refuse", "messages": messages, "flows": ["ingress", "egress"],
                   "permission": "deny", "key_exprs": ["**"]}],
        "subjects": [{"id": "revoked", "cert_common_names": list(certificate_names)}],
        "policies": [{"rules": ["refuse"], "subjects": ["revoked"]}]}))


def _config(listen: list[str], connect: list[str], multicast_scouting: bool,
            tls: TlsFiles | None, denied: Sequence[str]) -> zenoh.Config:
    config = zenoh.Config()
    config.insert_json5("mode", json.dumps("peer"))
    if tls is not None:
        listen = [tls_endpoint(endpoint) for endpoint in listen]
        connect = [tls_endpoint(endpoint) for endpoint in connect]
        _tls(config, tls)
        if denied:
            _deny(config, denied)
    config.insert_json5("listen/endpoints", json.dumps(listen))
    config.insert_json5("connect/endpoints", json.dumps(connect))
    config.insert_json5("scouting/multicast/enabled", json.dumps(multicast_scouting))
    # A silent link is declared dead after the lease: 4 s (Zenoh's default is 10 s) lets a
    # cluster notice a lost machine, and elect around it, within a few seconds on a LAN.
    config.insert_json5("transport/link/tx/lease", json.dumps(LEASE_MILLISECONDS))
    # Read-only admin space: the only place Zenoh reports the ports it actually bound.
    config.insert_json5("adminspace/enabled", json.dumps(True))
    config.insert_json5("adminspace/permissions", json.dumps({"read": True, "write": False}))
    return config


class ZenohUnavailable(RuntimeError):
    """Zenoh refused to open a session (a bad endpoint, a port already bound)."""


def _plain(message: str) -> str:
    """Zenoh's message without the source locations inside Zenoh's build tree."""
    return re.sub(r" at /\S+?\.rs:\d+\.?", "", message).strip()


def _undeclare(entity: "zenoh.Publisher | zenoh.Subscriber[None]") -> None:
    entity.undeclare()  # type: ignore[no-untyped-call]  # the zenoh stub leaves it unannotated


class _RemotePublisher:
    """A publisher to other sessions only, knowing whether one of them subscribes: Zenoh's
    matching listener keeps `heard` current, so a publication reads a bool instead of
    asking Zenoh each time (a call into Zenoh's runtime, measured at tens of µs under a
    busy loop against about 1 µs idle)."""

    def __init__(self, session: zenoh.Session, key: str) -> None:
        self.publisher = session.declare_publisher(
            key, congestion_control=zenoh.CongestionControl.BLOCK,
            reliability=zenoh.Reliability.RELIABLE, allowed_destination=zenoh.Locality.REMOTE)
        self.heard = False
        self._listener = self.publisher.declare_matching_listener(self._changed)
        # Read after the listener exists, so no change between the two is missed. The
        # stub calls matching_status a bool; Zenoh returns a MatchingStatus.
        self.heard = bool(self.publisher.matching_status.matching)  # type: ignore[attr-defined]

    def _changed(self, status: zenoh.MatchingStatus) -> None:
        self.heard = status.matching  # on a Zenoh thread: one assignment, no lock needed

    def undeclare(self) -> None:
        self._listener.undeclare()  # type: ignore[no-untyped-call]
        _undeclare(self.publisher)


class ZenohTransport:
    """A transport over one Zenoh session; build it with `ZenohTransport.open`."""

    def __init__(self, session: zenoh.Session) -> None:
        self._session = session
        self._publishers: dict[str, zenoh.Publisher] = {}
        self._remote_publishers: dict[str, _RemotePublisher] = {}
        self._subscribers: dict[QueueSubscription, zenoh.Subscriber[None]] = {}
        self._tokens: list[zenoh.LivelinessToken] = []
        self._queryables: list[zenoh.Queryable[None]] = []
        self._closed = False

    @classmethod
    async def open(cls, *, listen: list[str], connect: list[str],
                   multicast_scouting: bool = False,
                   tls: TlsFiles | None = None,
                   denied: Sequence[str] = ()) -> "ZenohTransport":
        """Open a peer session; endpoints look like `tcp/127.0.0.1:7447` (with `tls`, they
        become `tls/` endpoints on the same addresses).

        Peers in `connect` need not be up yet: Zenoh keeps retrying in the background.
        `denied`: node ids whose certificates are refused (revoked members).
        """
        try:
            config = _config(listen, connect, multicast_scouting, tls, denied)
            # Opening binds sockets and tries the connect endpoints: keep it off the loop.
            session = await anyio.to_thread.run_sync(zenoh.open, config)
        except zenoh.ZError as error:
            raise ZenohUnavailable(_plain(str(error))) from error
        return cls(session)

    def peer_count(self) -> int:
        """How many Zenoh peers this session is connected to right now."""
        return len(self._session.info.peers_zid())

    async def listen_endpoints(self) -> list[str]:
        """The endpoints this session listens on as bound (`tcp/127.0.0.1:0` resolved to
        its real port, `0.0.0.0` expanded to each interface), from the admin space."""
        self._check_open()

        def ask() -> list[str]:
            for reply in self._session.get(f"@/{self._session.zid()}/peer", timeout=2.0):
                if reply.ok is not None:
                    locators = json.loads(reply.ok.payload.to_string()).get("locators", [])
                    return [str(locator) for locator in locators]
            return []

        return await anyio.to_thread.run_sync(ask)

    async def publish(self, key: str, payload: bytes) -> None:
        self._check_open()
        publisher = self._publishers.get(key)
        if publisher is None:
            publisher = self._session.declare_publisher(
                key, congestion_control=zenoh.CongestionControl.BLOCK,
                reliability=zenoh.Reliability.RELIABLE)
            self._publishers[key] = publisher
        # A direct call: `put` only blocks while Zenoh's send queue is full, and a thread
        # hop per message would cost more than that rare wait.
        publisher.put(payload)

    async def publish_remote(self, key: str, payload: Callable[[], bytes]) -> None:
        self._check_open()
        remote = self._remote_publishers.get(key)
        if remote is None:
            remote = self._remote_publishers[key] = _RemotePublisher(self._session, key)
        # With no other session subscribed, Zenoh would deliver the put to nobody: it is
        # not made at all.
        if remote.heard:
            remote.publisher.put(payload())

    def subscribe(self, key_expr: str) -> QueueSubscription:
        self._check_open()
        subscription = QueueSubscription(asyncio.get_running_loop(), self._forget)

        def on_sample(sample: zenoh.Sample) -> None:
            # Runs on a Zenoh thread; the subscription hands it to the event loop.
            subscription.put_threadsafe(Message(str(sample.key_expr), sample.payload.to_bytes()))

        self._subscribers[subscription] = self._session.declare_subscriber(key_expr, on_sample)
        return subscription

    def declare_liveliness(self, key: str) -> None:
        self._check_open()
        self._tokens.append(self._session.liveliness().declare_token(key))

    def watch_liveliness(self, key_expr: str) -> QueueSubscription:
        self._check_open()
        watch = QueueSubscription(asyncio.get_running_loop(), self._forget)

        def on_change(sample: zenoh.Sample) -> None:
            alive = sample.kind == zenoh.SampleKind.PUT
            watch.put_threadsafe(Message(str(sample.key_expr), ALIVE if alive else GONE))

        # history=True: the tokens alive now arrive first, then the changes.
        self._subscribers[watch] = self._session.liveliness().declare_subscriber(
            key_expr, on_change, history=True)
        return watch

    def answer(self, key: str, handler: QueryHandler) -> None:
        self._check_open()

        def on_query(query: zenoh.Query) -> None:
            # On a Zenoh thread: the handler is quick and thread-safe by contract.
            payload = b"" if query.payload is None else query.payload.to_bytes()
            try:
                reply = handler(payload)
            except Exception as error:  # noqa: BLE001  (a bad query must not kill Zenoh's thread)
                logger.warning("query on {} failed: {}", key, type(error).__name__)
                return
            if reply is not None:
                query.reply(query.key_expr, reply)

        self._queryables.append(self._session.declare_queryable(key, on_query))

    async def query(self, key: str, payload: bytes, timeout: float) -> bytes | None:
        self._check_open()

        def ask() -> bytes | None:
            for reply in self._session.get(key, payload=payload, timeout=timeout):
                if reply.ok is not None:
                    return reply.ok.payload.to_bytes()
            return None

        return await anyio.to_thread.run_sync(ask)

    async def close(self) -> None:
        """End every subscription, then close the session; safe to call twice."""
        if self._closed:
            return
        self._closed = True
        for queryable in self._queryables:
            queryable.undeclare()  # type: ignore[no-untyped-call]
        self._queryables.clear()
        for subscription in list(self._subscribers):
            subscription.close()
        for publisher in self._publishers.values():
            _undeclare(publisher)
        for remote in self._remote_publishers.values():
            remote.undeclare()
        self._publishers.clear()
        self._remote_publishers.clear()
        for token in self._tokens:
            token.undeclare()  # type: ignore[no-untyped-call]
        self._tokens.clear()
        await anyio.to_thread.run_sync(self._session.close)

    def _forget(self, subscription: QueueSubscription) -> None:
        subscriber = self._subscribers.pop(subscription, None)
        if subscriber is not None and not self._session.is_closed():
            _undeclare(subscriber)

    def _check_open(self) -> None:
        if self._closed:
            raise TransportClosed("this Zenoh transport is closed; open a new one")


class ZenohQueryClient:
    """A blocking Zenoh client session for request/response from a process that is not a
    node (a runner asking another node for drafts). It connects to a node's endpoint and
    Zenoh routes its queries through that node."""

    def __init__(self, connect: list[str], tls: TlsFiles | None = None) -> None:
        config = zenoh.Config()
        config.insert_json5("mode", json.dumps("client"))
        if tls is not None:
            connect = [tls_endpoint(endpoint) for endpoint in connect]
            _tls(config, tls)
        config.insert_json5("connect/endpoints", json.dumps(connect))
        config.insert_json5("scouting/multicast/enabled", json.dumps(False))
        self._session = zenoh.open(config)

    def query(self, key: str, payload: bytes, timeout_seconds: float) -> bytes | None:
        """The first answer within the timeout, or None (nobody answers, or too late)."""
        for reply in self._session.get(key, payload=payload, timeout=timeout_seconds):
            if reply.ok is not None:
                return reply.ok.payload.to_bytes()
        return None

    def close(self) -> None:
        self._session.close()  # type: ignore[no-untyped-call]
