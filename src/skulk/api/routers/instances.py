"""Instances: place a model, look at one, remove one."""

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field

from skulk.api.context import ApiContext
from skulk.api.errors import ApiError
from skulk.api.generation import place_instance, resolve_card
from skulk.api.instance_view import instance_body
from skulk.shared.types.commands import DeleteInstance, PlaceInstance
from skulk.shared.types.ids import InstanceId, NodeId, new_command_id, new_instance_id
from skulk.shared.types.instances import Sharding
from skulk.shared.types.model_cards import EngineName

router = APIRouter(tags=["instances"])

DELETE_WAIT_SECONDS = 30.0


class PlaceInstanceRequest(BaseModel):
    """Where and how to run a model; everything but `model_id` is optional."""

    model_config = ConfigDict(extra="forbid")
    model_id: str = Field(description="A model id or alias.")
    engine: EngineName | None = Field(default=None, description="Pin an engine.")
    sharding: Sharding = Field(default="pipeline", description="How to split the model.")
    min_nodes: int = Field(default=1, ge=1, description="Use at least this many nodes.")
    excluded_nodes: list[NodeId] = Field(default_factory=list, description="Nodes to avoid.")


def _context(request: Request) -> ApiContext:
    context: ApiContext = request.app.state.context
    return context


@router.post("/place_instance", status_code=201)
async def place(body: PlaceInstanceRequest, request: Request) -> dict[str, str]:
    context = _context(request)
    card = resolve_card(context, body.model_id)
    command = PlaceInstance(command_id=new_command_id(), instance_id=new_instance_id(),
                            model_id=card.model_id, engine=body.engine,
                            sharding=body.sharding, min_nodes=body.min_nodes,
                            excluded_nodes=body.excluded_nodes)
    await place_instance(context, command)
    return {"instance_id": command.instance_id, "model_id": card.model_id}


def _known(context: ApiContext, instance_id: str) -> InstanceId:
    if instance_id not in context.replica.state.instances:
        raise ApiError(404, f"no instance '{instance_id}'; GET /state lists them",
                       code="instance_not_found")
    return InstanceId(instance_id)


@router.get("/instance/{instance_id}")
async def get_instance(instance_id: str, request: Request) -> dict[str, object]:
    context = _context(request)
    state = context.replica.state
    return instance_body(state, state.instances[_known(context, instance_id)])


@router.delete("/instance/{instance_id}")
async def delete_instance(instance_id: str, request: Request) -> JSONResponse:
    context = _context(request)
    known = _known(context, instance_id)
    await context.send_command(DeleteInstance(command_id=new_command_id(), instance_id=known))
    gone = await context.replica.wait_for(lambda s: known not in s.instances,
                                          DELETE_WAIT_SECONDS)
    if gone is None:
        raise ApiError(504, f"instance {known} was not removed within {DELETE_WAIT_SECONDS:.0f} s",
                       type="server_error", code="timeout")
    return JSONResponse({"deleted": known})
