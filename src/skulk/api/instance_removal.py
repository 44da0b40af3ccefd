"""Why an instance is gone, as the API tells whoever placed or waited for it: the master's
reason, carried by its removal and kept by this node's replica."""

from skulk.api.context import ApiContext
from skulk.api.errors import PLACEMENT_FAILED_STATUS, ApiError
from skulk.shared.types.ids import InstanceId, ModelId

UNSEEN_REASON = ("this node did not see why (it may have joined later or followed another "
                 "master meanwhile); the master's log and GET /events say")


def removed_instance_error(context: ApiContext, instance_id: InstanceId) -> ApiError | None:
    """410 with the reason when this node saw `instance_id` removed; None otherwise."""
    removal = context.cluster.replica.removed.get(instance_id)
    if removal is None:
        return None
    return ApiError(410, f"instance {instance_id} of {removal.model_id} was removed: "
                    f"{removal.reason}", code="instance_removed")


def placement_failed_error(context: ApiContext, model_id: ModelId,
                           instance_id: InstanceId | None = None,
                           after_seq: int = 0) -> ApiError:
    """The placement of `model_id` ended without a ready instance: 422 (retrying the same
    request would only fail the same way) with the removal's reason, the one of
    `instance_id` when given, else the newest of the model's after `after_seq`."""
    removed = context.cluster.replica.removed
    removal = (removed.get(instance_id) if instance_id is not None
               else removed.latest_of_model(model_id, after_seq))
    why = UNSEEN_REASON if removal is None else removal.reason
    which = f"instance {instance_id}" if instance_id is not None else "the instance"
    return ApiError(PLACEMENT_FAILED_STATUS, f"{which} of '{model_id}' failed to start and "
                    f"was removed: {why}", code="placement_failed")
