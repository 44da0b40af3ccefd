"""`GET /models/store`: what this node's model store holds, and which of it the cluster
knows through this node."""

from fastapi import APIRouter

from skulk.api.context import Cluster

router = APIRouter(tags=["models"])


@router.get("/models/store", summary="The models in this node's store")
async def get_store(cluster: Cluster) -> dict[str, object]:
    """Each stored model: its directory, format, size, files, where it came from (hub
    repository and commit, or the outside path it was linked from), the layers a
    pipeline stage's copy holds (null: the whole model) and whether its card is announced
    to the cluster from this node."""
    state = cluster.replica.state
    entries = []
    for entry in cluster.catalog.stored():
        holders = state.model_card_holders.get(entry.model_id, [])
        entries.append({
            "model_id": entry.model_id, "format": entry.format,
            "directory": str(cluster.catalog.models_dir / entry.directory),
            "size_bytes": entry.size_bytes,
            "files": [f.model_dump(mode="json") for f in entry.files],
            "repo": entry.repo, "revision": entry.revision, "linked_from": entry.linked_from,
            "layers": entry.layers,
            "announced": cluster.node_id in holders})
    return {"node_id": cluster.node_id,
            "models_dir": str(cluster.catalog.models_dir),
            "models": entries}
