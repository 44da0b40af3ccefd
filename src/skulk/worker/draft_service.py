"""A node's drafting service: answers draft queries from runners on other nodes with
n-gram prompt lookup, keeping each request's index between queries (a bounded number of
them, least recently used first out). Every node serves it, whatever engine it runs, and
it loads no engine. Thread-safe: the transport calls it on its own threads."""

import threading
from collections import OrderedDict

from loguru import logger
from pydantic import ValidationError

from skulk.shared.types.drafting import DraftQuery, DraftReply
from skulk.shared.types.ids import TaskId
from skulk.shared.types.wire import from_msgpack, to_msgpack
from skulk.worker.engines.mlx.drafters.ngram import NGramSession

MAX_SESSIONS = 64
ADVERTISED_DRAFTERS = ["ngram"]  # what a node's capability card says it serves


class DraftService:
    def __init__(self, max_sessions: int = MAX_SESSIONS) -> None:
        self._sessions: OrderedDict[TaskId, NGramSession] = OrderedDict()
        self._max_sessions = max_sessions
        self._lock = threading.Lock()
        self.answered = 0

    def handle(self, payload: bytes) -> bytes | None:
        """One query's reply; None for a payload that is not a draft query."""
        try:
            query = from_msgpack(DraftQuery, payload)
        except (ValidationError, ValueError) as error:
            logger.warning("ignoring a malformed draft query: {}", type(error).__name__)
            return None
        with self._lock:
            session = self._sessions.pop(query.request_id, None) or NGramSession()
            self._sessions[query.request_id] = session
            while len(self._sessions) > self._max_sessions:
                self._sessions.popitem(last=False)
            draft = session.propose(query.context, query.limit)
            self.answered += 1
        return to_msgpack(DraftReply(tokens=list(draft.tokens), kind=draft.kind))
