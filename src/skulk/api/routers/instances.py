"""Instances: place a model, preview where it could go, look at one, remove one."""

import time
from dataclasses import replace

import anyio
from fastapi import APIRouter, Query
from pydantic import BaseModel, ConfigDict, Field

from skulk.api.context import ApiContext, Context
from skulk.api.errors import ApiError
from skulk.api.instance_removal import placement_failed_error, removed_instance_error
from skulk.api.instance_view import InstanceView, instance_view
from skulk.api.serving import place_instance, resolve_card
from skulk.master.eviction import freed
from skulk.master.idle import busy
from skulk.master.placement import ClusterView, PlacementError, choose_plan, previews
from skulk.master.placement.plans import Plan
from skulk.master.placement.previews import PlacementPreview
from skulk.shared.types.commands import DeleteInstance, PlaceInstance, PlacementPreference
from skulk.shared.types.ids import InstanceId, ModelId, NodeId, new_command_id, new_instance_id
from skulk.shared.types.instances import Sharding
from skulk.shared.types.model_cards import EngineName, ModelCard

router = APIRouter(tags=["instances"])

DELETE_WAIT_SECONDS = 30.0
# Right after nodes join, their memory readings are still on their way: a placement that
# fails only for want of them is retried this long before the API answers 503.
PLACEMENT_INFO_WAIT_SECONDS = 15.0
PLACEMENT_INFO_POLL_SECONDS = 0.5


class PlaceInstanceRequest(BaseModel):
    """Where and how to run a model; everything but `model_id` is optional."""

    model_config = ConfigDict(extra="forbid")
    model_id: str = Field(description="A model id or alias.")
    engine: EngineName | None = Field(
        default=None, description="Pin an engine; unset lets placement choose (llama_cpp "
        "when the model fits whole on one node, mlx when it must be split).")
    sharding: Sharding = Field(default="pipeline", description="How to split the model: "
                               "`pipeline` by layers, `tensor` by attention heads.")
    min_nodes: int = Field(default=1, ge=1, description="Use at least this many nodes "
                           "(capped at the number of usable nodes).")
    excluded_nodes: list[NodeId] = Field(default_factory=list, description="Nodes to avoid.")
    prefer: PlacementPreference = Field(
        default="auto", description="`auto`: the narrowest plan that fits, unless a wider "
        "plan of the same engine over machines that run nothing else is predicted, from "
        "measurements, to decode at least 1.5x faster (a split by heads on a fast link); "
        "`fewest_nodes`: the narrowest plan that fits; `speed`: of every plan that fits "
        "(one node, a pipeline or a split by heads), the one predicted to decode fastest "
        "(`sharding` is then not binding).")


class DeletedInstance(BaseModel):
    """The instance that was removed."""

    deleted: InstanceId = Field(description="Id of the removed instance.")


class InstanceRemoval(BaseModel):
    """Why an instance is gone, as this node saw the master remove it."""

    instance_id: InstanceId = Field(description="The removed instance.")
    model_id: ModelId = Field(description="Its model.")
    reason: str = Field(description="The master's reason, e.g. what a worker that gave "
                        "the instance up could not do.")
    replaced_by: InstanceId | None = Field(description="The instance placed in its stead; "
                                           "None when none was.")


class NodeMemoryView(BaseModel):
    """One rank of a candidate placement and its memory figures."""

    node_id: NodeId = Field(description="Node that would run the rank.")
    rank: int = Field(description="Rank within the candidate, from 0.")
    start_layer: int = Field(description="First layer it would hold.")
    end_layer: int = Field(description="One past the last layer it would hold (it would "
                           "hold `start_layer` to `end_layer - 1`).")
    needed_bytes: int = Field(description="System memory: weights share x engine overhead "
                              "+ KV + floor, less what goes to the GPU.")
    usable_bytes: int = Field(description="What the node can give (must exceed the need).")
    gpu_layers: int = Field(default=0, description="Layers the rank would put on the "
                            "node's GPU; 0: none (no GPU, or one that holds no layer).")
    vram_needed_bytes: int = Field(default=0, description="GPU memory those layers take "
                                   "with the GPU's reserve; 0 on Apple's unified memory, "
                                   "where they count in `needed_bytes`.")
    vram_usable_bytes: int = Field(default=0, description="Free memory of the GPUs that "
                                   "would take them (must exceed their need).")
    fits: bool = Field(description="Whether the node admits this rank.")


class PlacementPreviewView(BaseModel):
    """One candidate shape of a placement."""

    engine: EngineName = Field(description="Engine of this candidate.")
    sharding: Sharding = Field(description="Sharding of this candidate.")
    width: int = Field(description="Number of nodes.")
    fits: bool = Field(description="Whether it could be placed now.")
    reason: str | None = Field(description="Why it cannot be placed; None when it can.")
    nodes: list[NodeMemoryView] = Field(description="Per-rank memory, when nodes exist for it.")
    predicted_decode_tps: float | None = Field(
        default=None, description="Predicted tokens/s of one stream, from the nodes' "
        "measured memory read rates and the links' round trips; None when its nodes are "
        "not known.")
    prediction_assumes: list[str] = Field(
        default_factory=list, description="What the prediction assumed for want of a "
        "measurement (e.g. gigabit links).")
    placed_by_default: bool = Field(
        default=False, description="Whether a placement with the defaults (`prefer=auto`, "
        "one node or more) would take this candidate now.")


class PlacementPreviews(BaseModel):
    """Every candidate placement of a model over 1..N usable nodes."""

    model_id: ModelId = Field(description="The model, by canonical id.")
    waiting_for: list[NodeId] = Field(description="Live nodes whose memory is not known yet; "
                                   "previews may change once they report.")
    previews: list[PlacementPreviewView] = Field(description="The candidates.")


def _cluster(context: ApiContext) -> ClusterView:
    readings = context.cluster.telemetry.live()
    live = frozenset(context.cluster.live_nodes()) or frozenset(
        {context.cluster.node_id, *readings})
    return ClusterView(nodes={n: r for n, r in readings.items() if n in live},
                       live_nodes=live, instances=context.cluster.replica.state.instances)


async def _dry_run(context: ApiContext, command: PlaceInstance, card: ModelCard) -> None:
    """Raise 400 when no placement can exist, 503 when node readings stay missing."""
    deadline = time.monotonic() + PLACEMENT_INFO_WAIT_SECONDS
    while True:
        plan = choose_plan(command, card, _cluster(context))
        if not isinstance(plan, PlacementError):
            return
        if not plan.pending:
            if _fits_after_evicting(context, command, card):
                return  # the master makes room by evicting idle instances
            raise ApiError(400, f"cannot place {card.model_id}: {plan.describe()}",
                           code="placement_impossible")
        if time.monotonic() >= deadline:
            raise ApiError(503, f"cannot place {card.model_id} yet: {plan.describe()}; "
                           "try again in a few seconds", type="server_error",
                           code="placement_pending")
        await anyio.sleep(PLACEMENT_INFO_POLL_SECONDS)


def _fits_after_evicting(context: ApiContext, command: PlaceInstance,
                         card: ModelCard) -> bool:
    """Whether the placement would fit with every idle, unpinned instance gone (the
    master evicts the fewest, least recently used first)."""
    state = context.cluster.replica.state
    idle = [i for i in state.instances.values() if not i.pinned and not busy(state, i)]
    if not idle:
        return False
    cluster = _cluster(context)
    gone = {i.instance_id for i in idle}
    roomier = replace(cluster, nodes=freed(cluster.nodes, idle, context.cluster.catalog),
                      instances={i: x for i, x in cluster.instances.items() if i not in gone})
    return not isinstance(choose_plan(command, card, roomier), PlacementError)


@router.post("/place_instance", status_code=201, response_model=InstanceView,
             summary="Place an instance of a model; waits until the master placed it",
             description="Placement is checked here first: 400 when no set of nodes can hold "
             "the model as asked (the message says, per node, why), 503 when live nodes "
             "have not reported their memory yet, 422 when the master refused it or it was "
             "removed before this answer (the message says why). The answer comes once the "
             "instance is placed, before it is loaded: follow `GET /instance/{id}` until "
             "`ready`, or until 410, which says why it was removed.")
async def place(body: PlaceInstanceRequest, context: Context) -> InstanceView:
    card = resolve_card(context, body.model_id)
    command = PlaceInstance(command_id=new_command_id(), instance_id=new_instance_id(),
                            model_id=card.model_id, engine=body.engine,
                            sharding=body.sharding, min_nodes=body.min_nodes,
                            excluded_nodes=body.excluded_nodes, prefer=body.prefer)
    await _dry_run(context, command, card)
    await place_instance(context, command)
    state = context.cluster.replica.state
    instance = state.instances.get(command.instance_id)
    if instance is None:  # placed, then removed again (a refusal, a lost node)
        raise placement_failed_error(context, card.model_id, command.instance_id)
    return instance_view(state, instance)


def _preview_view(preview: PlacementPreview, default: Plan | PlacementError
                  ) -> PlacementPreviewView:
    ranks = [] if preview.plan is None else preview.plan.ranks
    speed = preview.speed
    chosen = isinstance(default, Plan) and preview.reason is None and (
        default.engine, default.sharding, default.width) == (
        preview.engine, preview.sharding, preview.width)
    return PlacementPreviewView(
        engine=preview.engine, sharding=preview.sharding, width=preview.width,
        fits=preview.reason is None, reason=preview.reason, placed_by_default=chosen,
        predicted_decode_tps=None if speed is None else round(speed.tokens_per_second, 3),
        prediction_assumes=[] if speed is None else list(speed.assumed),
        nodes=[NodeMemoryView(node_id=r.node_id, rank=i, start_layer=r.start_layer,
                              end_layer=r.end_layer, needed_bytes=r.needed_bytes,
                              usable_bytes=r.usable_bytes, gpu_layers=r.gpu_layers,
                              vram_needed_bytes=r.vram_needed_bytes,
                              vram_usable_bytes=r.vram_usable_bytes, fits=r.fits)
               for i, r in enumerate(ranks)])


# Declared before /instance/{instance_id}, which would otherwise take `previews` as an id.
@router.get("/instance/previews", response_model=PlacementPreviews,
            summary="Candidate placements of a model: per node, memory needed vs usable")
async def get_previews(context: Context,
                       model_id: str = Query(description="A model id or alias.")
                       ) -> PlacementPreviews:
    card = resolve_card(context, model_id)
    cluster = _cluster(context)
    default = choose_plan(PlaceInstance(command_id=new_command_id(),
                                        instance_id=new_instance_id(),
                                        model_id=card.model_id), card, cluster)
    return PlacementPreviews(model_id=card.model_id, waiting_for=cluster.missing_readings(),
                             previews=[_preview_view(p, default)
                                       for p in previews(card, cluster)])


def _must_exist(context: ApiContext, instance_id: InstanceId) -> None:
    if instance_id not in context.cluster.replica.state.instances:
        raise removed_instance_error(context, instance_id) or ApiError(
            404, f"no instance '{instance_id}'; GET /state lists them",
            code="instance_not_found")


@router.get("/instance/{instance_id}", response_model=InstanceView,
            summary="One instance: status and its ranks with nodes and layer ranges",
            description="404 for an instance this node never knew; 410 for one it saw "
            "removed, with the reason (`GET /instance/{id}/removal` has it as fields).")
async def get_instance(instance_id: InstanceId, context: Context) -> InstanceView:
    _must_exist(context, instance_id)
    state = context.cluster.replica.state
    return instance_view(state, state.instances[instance_id])


@router.get("/instance/{instance_id}/removal", response_model=InstanceRemoval,
            summary="Why an instance was removed, and what replaced it",
            description="404 when this node did not see it removed (it still runs, never "
            "existed, or went before this node followed the master).")
async def get_removal(instance_id: InstanceId, context: Context) -> InstanceRemoval:
    removal = context.cluster.replica.removed.get(instance_id)
    if removal is None:
        raise ApiError(404, f"this node saw no removal of '{instance_id}'",
                       code="instance_not_found")
    return InstanceRemoval(instance_id=removal.instance_id, model_id=removal.model_id,
                           reason=removal.reason, replaced_by=removal.replaced_by)


@router.delete("/instance/{instance_id}", response_model=DeletedInstance,
               summary="Delete an instance; its runners shut down")
async def delete_instance(instance_id: InstanceId, context: Context) -> DeletedInstance:
    _must_exist(context, instance_id)
    await context.requests.commands.send(DeleteInstance(
        command_id=new_command_id(), instance_id=instance_id,
        reason=f"deleted on request (DELETE /instance through node {context.cluster.node_id})"))
    gone = await context.cluster.replica.wait_for(lambda s: instance_id not in s.instances,
                                          DELETE_WAIT_SECONDS)
    if gone is None:
        raise ApiError(504, f"instance {instance_id} was not removed within "
                       f"{DELETE_WAIT_SECONDS:.0f} s", type="server_error", code="timeout")
    return DeletedInstance(deleted=instance_id)
