"""A refused placement is tried once more, one node wider, so each node holds less."""

from skulk.shared.types.commands import PlaceInstance, RefusePlacement
from skulk.shared.types.ids import CommandId, InstanceId
from skulk.shared.types.instances import Instance


def wider_placement(instance: Instance, refusal: RefusePlacement, cluster_size: int,
                    new_instance_id: InstanceId) -> PlaceInstance | str:
    """The command that re-places `instance` one node wider, or why there is no wider one.

    The engine is left to placement (a wider instance may need another engine) and no node
    is excluded, the refusing one included: with more nodes its share shrinks. Each
    refusal widens by one and the cluster's size bounds the width, so the loop ends.
    """
    width = len(instance.shards) + 1
    if width > cluster_size:
        return (f"it already spans {len(instance.shards)} of the cluster's {cluster_size} "
                "usable node(s)")
    return PlaceInstance(command_id=CommandId(f"{refusal.command_id}-wider"),
                         instance_id=new_instance_id, model_id=instance.model_id,
                         sharding=instance.sharding, min_nodes=width)
