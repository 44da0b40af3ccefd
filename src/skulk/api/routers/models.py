"""`GET /v1/models`: the models the cluster knows, in the OpenAI list format."""

from fastapi import APIRouter

from skulk.api.context import ApiContext, Context
from skulk.api.serving import resolve_card
from skulk.shared.types.model_cards import ModelCard

router = APIRouter(tags=["openai"])

# Cards carry no release date; a fixed epoch keeps the field stable across restarts.
_CREATED = 1_700_000_000


def _model_body(context: ApiContext, card: ModelCard) -> dict[str, object]:
    formats = [s.format for s in card.sources if context.catalog.local_path(card, s.format)]
    return {"id": card.model_id, "object": "model", "created": _CREATED, "owned_by": "skulk",
            "aliases": card.aliases, "context_length": card.context_length,
            "available_formats": formats,
            # Nodes whose store holds an added model (none for a built-in card).
            "stored_on": list(context.replica.state.model_card_holders.get(card.model_id, [])),
            "running_instances": len(context.replica.state.instances_of(card.model_id))}


@router.get("/v1/models", summary="Models the cluster knows (OpenAI list format)")
async def list_models(context: Context) -> dict[str, object]:
    return {"object": "list", "data": [_model_body(context, c) for c in context.catalog.cards()]}


@router.get("/v1/models/{model_id:path}", summary="One model by id or alias")
async def get_model(model_id: str, context: Context) -> dict[str, object]:
    return _model_body(context, resolve_card(context, model_id))
