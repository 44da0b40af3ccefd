"""Drafting on another node: each round the verifying runner sends the committed token
ids to the drafting node over the cluster transport and uses what comes back.

The answer only ever becomes a draft, which the verifier checks, so a wrong answer can
only lower acceptance; a late or missing one (timeout, node gone) is an empty draft.
After a failure the session stops asking for a while (1, 2, 4 ... up to 64 rounds), so a
dead drafting node costs almost nothing while decoding goes on without drafts. Each time
without answers, from the first failure to the next answer (or the request's end), is a
`drafting.unavailable` span in the request's trace.
"""

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from loguru import logger

from skulk.shared.types.drafting import DraftQuery, DraftReply
from skulk.shared.types.ids import NodeId, TaskId
from skulk.shared.types.traces import Span
from skulk.shared.types.wire import from_msgpack, to_msgpack
from skulk.worker.engines.mlx.drafters.protocol import EMPTY_DRAFT, Draft, DrafterName
from skulk.worker.engines.mlx.options import DEFAULT_REMOTE_DRAFT_TIMEOUT_MS, MlxOptions

LONGEST_BACKOFF_ROUNDS = 64
UNAVAILABLE_SPAN = "drafting.unavailable"


def _now_us() -> int:
    return time.time_ns() // 1000


class QueryClient(Protocol):
    def query(self, key: str, payload: bytes, timeout_seconds: float) -> bytes | None: ...

    def close(self) -> None: ...


@dataclass
class RemoteSession:
    client: QueryClient
    key: str
    request_id: TaskId
    timeout_seconds: float
    failures: int = 0
    _skip: int = 0
    _outages: list[Span] = field(default_factory=list)  # closed spans without answers
    _outage_since_us: int | None = None

    def propose(self, context: Sequence[int], limit: int) -> Draft:
        if limit <= 0:
            return EMPTY_DRAFT
        if self._skip > 0:
            self._skip -= 1
            return EMPTY_DRAFT
        query = DraftQuery(request_id=self.request_id, context=list(context),
                           limit=min(limit, 64))
        try:
            answer = self.client.query(self.key, to_msgpack(query), self.timeout_seconds)
            reply = None if answer is None else from_msgpack(DraftReply, answer)
        except Exception as error:  # noqa: BLE001  (any transport failure is a missing draft)
            logger.debug("remote draft failed: {}", error)
            reply = None
        if reply is None:
            if self._outage_since_us is None:
                self._outage_since_us = _now_us()
            self.failures += 1
            self._skip = min(2 ** (self.failures - 1), LONGEST_BACKOFF_ROUNDS)
            if self.failures == 1:
                logger.info("no draft from {} for {}; decoding on without drafts while it "
                            "is away", self.key, self.request_id)
            return EMPTY_DRAFT
        self.failures = 0
        self._end_outage()
        return Draft(tuple(reply.tokens[:limit]), kind=reply.kind)

    def close(self) -> tuple[Span, ...]:
        self._end_outage()
        return tuple(self._outages)

    def _end_outage(self) -> None:
        if self._outage_since_us is None:
            return
        start, self._outage_since_us = self._outage_since_us, None
        self._outages.append(Span(name=UNAVAILABLE_SPAN, node_id=NodeId(""), start_us=start,
                                  duration_us=max(_now_us() - start, 0)))


class RemoteDrafter:
    """Drafts from the node answering `key`; one client session for every request."""

    def __init__(self, client: QueryClient, key: str,
                 timeout_seconds: float = DEFAULT_REMOTE_DRAFT_TIMEOUT_MS / 1000) -> None:
        self._client = client
        self._key = key
        self._timeout = timeout_seconds

    @property
    def name(self) -> DrafterName:
        return "remote"

    def open(self, request_id: str) -> RemoteSession:
        # The loop opens a session per request under the request's task id.
        return RemoteSession(self._client, self._key, TaskId(request_id), self._timeout)


def remote_drafter_from_options(options: MlxOptions) -> RemoteDrafter:
    """From engine options: `drafter_key` (where the drafting node answers),
    `cluster_connect` (this node's transport endpoints), `cluster_data_dir` (on a secure
    cluster: whose node certificate opens the link) and `remote_draft_timeout_ms`."""
    key, connect = options.drafter_key, options.cluster_connect
    if not key or not connect:
        raise ValueError("a remote drafter needs the drafter_key and cluster_connect options")
    from skulk.routing.zenoh_transport import ZenohQueryClient
    from skulk.trust.files import TrustFiles
    data_dir = options.cluster_data_dir
    tls = None if data_dir is None else TrustFiles(data_dir).tls_files()
    return RemoteDrafter(ZenohQueryClient(connect, tls), key,
                         options.remote_draft_timeout_ms / 1000)
