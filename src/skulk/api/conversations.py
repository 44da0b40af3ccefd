"""Server-side conversations: the API node keeps the history, the runner keeps its KV.

The wire calls one a session (`/v1/sessions`, `session_id`); the code calls it a
conversation, because a session in the code is a master's run of the event log.
A conversation is bound to one model and holds either chat messages or token ids. Each turn
sends the whole history with the session id; the runner holding the session's KV cache
prefills only what is new since the last turn. Sessions live in the memory of the node
that created them, expire after `idle_ttl` seconds unused, and at most `capacity` are open.
"""

import secrets
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from skulk.api.errors import ApiError
from skulk.shared.types.chunks import Usage
from skulk.shared.types.ids import ConversationId, ModelId
from skulk.shared.types.tasks import ChatMessage

DEFAULT_CAPACITY = 64
DEFAULT_IDLE_TTL_SECONDS = 3600.0
_CLOSED_REMEMBERED = 1024

ConversationKind = Literal["chat", "tokens"]


@dataclass
class Conversation:
    """One conversation: its history, and what its last turn cost."""

    session_id: ConversationId
    model_id: ModelId
    kind: ConversationKind
    created: float
    last_used: float
    messages: list[ChatMessage] = field(default_factory=list)
    tokens: list[int] = field(default_factory=list)
    turns: int = 0
    busy: bool = False
    last_usage: Usage | None = None

    def history_length(self) -> int:
        return len(self.messages) if self.kind == "chat" else len(self.tokens)

    def context_tokens(self) -> int:
        """Tokens the runner holds for this session after its last turn."""
        usage = self.last_usage
        return 0 if usage is None else usage.prompt_tokens + usage.completion_tokens

    def record_turn(self, text: str, token_ids: list[int], usage: Usage | None) -> None:
        """Append a generated reply: its text to a chat, its token ids to a token session."""
        if self.kind == "chat":
            self.messages.append(ChatMessage(role="assistant", content=text))
        else:
            self.tokens += token_ids
        self.turns += 1
        self.last_usage = usage


class ConversationStore:
    def __init__(self, capacity: int = DEFAULT_CAPACITY,
                 idle_ttl: float = DEFAULT_IDLE_TTL_SECONDS,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._capacity = capacity
        self._idle_ttl = idle_ttl
        self._clock = clock
        self._open: dict[ConversationId, Conversation] = {}
        self._closed: OrderedDict[ConversationId, str] = OrderedDict()  # id -> why it closed

    def create(self, model_id: ModelId, kind: ConversationKind) -> Conversation:
        self._expire()
        if len(self._open) >= self._capacity:
            raise ApiError(429, f"this node already holds {self._capacity} open sessions; "
                           "close one (DELETE /v1/sessions/{id}) or wait for one to expire",
                           code="too_many_sessions")
        now = self._clock()
        session = Conversation(ConversationId(f"sess_{secrets.token_hex(8)}"), model_id, kind,
                               now, now)
        self._open[session.session_id] = session
        return session

    def open_count(self) -> int:
        return len(self._open)

    def get(self, session_id: ConversationId) -> Conversation:
        self._expire()
        session = self._open.get(session_id)
        if session is not None:
            session.last_used = self._clock()
            return session
        why = self._closed.get(session_id)
        if why is not None:
            raise ApiError(410, f"session '{session_id}' is closed ({why}); create a new one",
                           code="session_closed", param="session_id")
        raise ApiError(404, f"no session '{session_id}' on this node; sessions live on the "
                       "node that created them", code="session_not_found", param="session_id")

    def close(self, session_id: ConversationId, why: str = "closed by the client") -> Conversation:
        session = self.get(session_id)
        if session.busy:
            raise ApiError(409, f"session '{session_id}' is generating; cancel or wait first",
                           code="session_busy")
        del self._open[session_id]
        self._remember_closed(session_id, why)
        return session

    def _expire(self) -> None:
        now = self._clock()
        for session_id, session in list(self._open.items()):
            if not session.busy and now - session.last_used > self._idle_ttl:
                del self._open[session_id]
                self._remember_closed(session_id, f"idle for over {self._idle_ttl:.0f} s")

    def _remember_closed(self, session_id: ConversationId, why: str) -> None:
        self._closed[session_id] = why
        while len(self._closed) > _CLOSED_REMEMBERED:
            self._closed.popitem(last=False)
