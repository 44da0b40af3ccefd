"""A removed instance's reason reaches whoever placed or waited for it, with a status the
official clients do not retry."""

import pytest

from skulk.api.context import ApiContext
from skulk.api.errors import ApiError
from skulk.api.routers.instances_test import InProcessMaster, api_context, serve
from skulk.api.serving import ensure_serving
from skulk.shared.types.chunks import ErrorChunk
from skulk.shared.types.commands import Command, DeleteInstance, PlaceInstance
from skulk.shared.types.events import InstanceDeleted
from skulk.shared.types.ids import CommandId, InstanceId, ModelId
from skulk.testing.channels import SendThrough
from skulk.testing.placement import GIB, node

HUB_DOWN = ("node a gave it up: cannot list Qwen/Qwen2.5-0.5B-Instruct-GGUF on the hub: "
            "[Errno -2] Name or service not known")


def giving_up(context: ApiContext, master: InProcessMaster) -> None:
    """Every instance placed is given up at once by its worker, with HUB_DOWN."""
    async def send(command: Command) -> None:
        await master.send(command)
        if isinstance(command, PlaceInstance):
            await master.send(DeleteInstance(command_id=CommandId("del"),
                                             instance_id=command.instance_id,
                                             reason=HUB_DOWN))
    context.requests.commands = SendThrough(send)


@pytest.mark.anyio
async def test_placing_an_instance_that_is_given_up_at_once_is_a_422_with_the_reason() -> None:
    context, master = api_context([node("a", 8 * GIB)])
    giving_up(context, master)
    async with serve(context) as client:
        response = await client.post("/place_instance", json={"model_id": "smollm2-135m"})
    assert response.status_code == 422, response.text
    error = response.json()["error"]
    assert error["code"] == "placement_failed" and HUB_DOWN in error["message"]


@pytest.mark.anyio
async def test_a_removed_instance_answers_410_with_why_and_what_replaced_it() -> None:
    context, master = api_context([node("a", 8 * GIB)])
    async with serve(context) as client:
        placed = (await client.post("/place_instance",
                                    json={"model_id": "smollm2-135m"})).json()
        gone = InstanceId(placed["instance_id"])
        master.emit(InstanceDeleted(instance_id=gone, reason="rank 0 ended; placed again "
                                    "as inst-new", replaced_by=InstanceId("inst-new")))
        shown = await client.get(f"/instance/{gone}")
        removal = await client.get(f"/instance/{gone}/removal")
        unseen = await client.get("/instance/inst-never/removal")
    assert shown.status_code == 410
    assert shown.json()["error"]["code"] == "instance_removed"
    assert "rank 0 ended" in shown.json()["error"]["message"]
    assert removal.json() == {"instance_id": gone, "model_id": "smollm2-135m",
                              "reason": "rank 0 ended; placed again as inst-new",
                              "replaced_by": "inst-new"}
    assert unseen.status_code == 404


@pytest.mark.anyio
async def test_a_request_whose_placement_fails_gets_the_reason_not_a_retryable_503() -> None:
    context, master = api_context([node("a", 8 * GIB)])
    # An earlier removal of the same model must not be taken for this one's reason.
    await master.send(PlaceInstance(command_id=CommandId("old"),
                                    instance_id=InstanceId("inst-old"),
                                    model_id=ModelId("smollm2-135m")))
    master.emit(InstanceDeleted(instance_id=InstanceId("inst-old"), reason="idle for 600 s"))
    giving_up(context, master)
    with pytest.raises(ApiError) as refused:
        await ensure_serving(context, ModelId("smollm2-135m"))
    assert refused.value.status == 422 and HUB_DOWN in refused.value.message
    assert "idle" not in refused.value.message


def test_a_placement_the_master_refuses_is_not_a_5xx() -> None:
    error = ApiError.from_chunk(ErrorChunk(error_kind="placement_failed",
                                           message="llama_cpp whole needs 2 GiB"))
    assert error.status == 422
