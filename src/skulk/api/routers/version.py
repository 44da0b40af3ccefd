"""`GET /version`: what this node runs, for bug reports and for checking that every
machine of a cluster was upgraded."""

from fastapi import APIRouter

from skulk.api.context import Operations
from skulk.versions import Versions

router = APIRouter(tags=["operations"])


@router.get("/version", summary="Skulk's version, the checkout's commit, and the engines'")
async def version(operations: Operations) -> Versions:
    return operations.versions()
