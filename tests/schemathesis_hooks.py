"""Schemathesis hooks for the fuzz test: every generation asks for at most a few tokens.

Without this, a generated request that leaves its token limit unset (which the API allows:
it means "up to the context limit") spends the whole time budget on one long reply, and
every request queued behind it on the one runner times out.
"""

from typing import Any

import schemathesis

MOST_TOKENS = 4
# Every body field, in every dialect, that bounds how many tokens a request generates.
TOKEN_LIMIT_FIELDS = ("max_tokens", "max_completion_tokens", "max_output_tokens")
GENERATION_PATHS = {
    "/v1/chat/completions", "/v1/completions", "/v1/responses", "/v1/messages",
    "/api/chat", "/api/generate", "/ollama/api/chat", "/ollama/api/generate",
    "/v1/sessions/{session_id}/generate",
}


@schemathesis.hook
def before_call(context: schemathesis.HookContext, case: Any, kwargs: dict[str, Any]) -> None:
    # `before_call` sees every case of every phase; `map_case` skips the examples phase,
    # whose explicit `null` limits made one request generate to the context limit.
    body = case.body
    if case.operation.path not in GENERATION_PATHS or not isinstance(body, dict):
        return
    for key in TOKEN_LIMIT_FIELDS:
        if not isinstance(body.get(key), int) or body[key] > MOST_TOKENS:
            body[key] = MOST_TOKENS
    if "ollama" in case.operation.path or case.operation.path.startswith("/api/"):
        options = body.get("options")
        if not isinstance(options, dict):
            options = body["options"] = {}
        options["num_predict"] = MOST_TOKENS
