"""What a verifying runner and a drafting node say to each other: committed token ids
one way, proposed ids back. Every node answers these, whatever engine it runs."""

from pydantic import Field

from skulk.shared.types.base import WireModel
from skulk.shared.types.ids import TaskId

DRAFT_SERVICE = "drafter"  # the service a node answers draft queries on


class DraftQuery(WireModel):
    """Propose up to `limit` tokens to follow `context`."""

    request_id: TaskId = Field(description="The generation this draft is for; the drafter "
                            "keeps its index per request between queries.")
    context: list[int] = Field(description="Every committed token id, prompt included.")
    limit: int = Field(ge=0, le=64, description="The most tokens to propose.")


class DraftReply(WireModel):
    """The proposed token ids (possibly none)."""

    tokens: list[int] = Field(description="Proposed ids, in order.")
    kind: int = Field(default=0, description="What the draft rests on (n-gram: the matched "
                      "suffix length), for the verifier's acceptance statistics.")
