"""`GET /v1/models`: the models the cluster can answer, in the OpenAI list format, which
also carries the fields of Anthropic's (the two dialects share the path).

Running models come first, then those whose weights a node holds; catalogue cards that
would need a download are listed only with `?all=true`, marked `"status": "download"`.
"""

from typing import Annotated

from fastapi import APIRouter, Query

from skulk.api.context import ApiContext, Context
from skulk.api.model_availability import ModelAvailability, availability, listed_models
from skulk.api.serving import resolve_card

router = APIRouter(tags=["openai"])

# Cards carry no release date; a fixed epoch keeps the field stable across restarts.
_CREATED = 1_700_000_000
_CREATED_AT = "2023-11-14T22:13:20Z"  # the same instant, as Anthropic writes it


def _model_body(context: ApiContext, model: ModelAvailability) -> dict[str, object]:
    card = model.card
    formats = [s.format for s in card.sources if context.cluster.catalog.local_path(card, s.format)]
    return {"id": card.model_id, "object": "model", "created": _CREATED, "owned_by": "skulk",
            "type": "model", "display_name": card.model_id, "created_at": _CREATED_AT,
            "aliases": card.aliases, "context_length": card.context_length,
            "status": model.status, "held_by": model.held_by,
            "available_formats": formats,
            # Nodes whose store holds an added model (none for a built-in card).
            "stored_on": list(
                context.cluster.replica.state.model_card_holders.get(card.model_id, [])),
            "running_instances": len(context.cluster.replica.state.instances_of(card.model_id))}


@router.get("/v1/models", summary="Models the cluster can answer (OpenAI list format)")
async def list_models(context: Context, everything: Annotated[bool, Query(
        alias="all", description="Also list the catalogue's cards whose weights no node "
        "holds (they load only after a download), marked `status: download`.")] = False,
        ) -> dict[str, object]:
    listed = listed_models(context, everything=everything)
    data = [_model_body(context, model) for model in listed]
    first = data[0]["id"] if data else None
    last = data[-1]["id"] if data else None
    return {"object": "list", "data": data,
            "has_more": False, "first_id": first, "last_id": last}


@router.get("/v1/models/{model_id:path}", summary="One model by id or alias")
async def get_model(model_id: str, context: Context) -> dict[str, object]:
    return _model_body(context, availability(context, resolve_card(context, model_id)))
