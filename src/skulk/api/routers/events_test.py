import pytest

from skulk.api.routers.instances_test import api_context, serve
from skulk.shared.types.events import RunnerStatusUpdated
from skulk.shared.types.ids import RunnerId
from skulk.shared.types.runners import RunnerReady
from skulk.testing.placement import node


@pytest.mark.anyio
async def test_recent_events_page_by_sequence_and_filter_by_kind() -> None:
    context, master = api_context([node("a")])
    async with serve(context) as client:
        placed = await client.post("/place_instance", json={"model_id": "smollm2-135m"})
        runner = placed.json()["ranks"][0]["runner_id"]
        master.emit(RunnerStatusUpdated(runner_id=RunnerId(runner), status=RunnerReady()))

        body = (await client.get("/events")).json()
        assert body["node_id"] == "a"
        kinds = [e["kind"] for e in body["events"]]
        assert kinds == ["StateSnapshotHydrated", "InstanceCreated", "RunnerStatusUpdated"]
        assert [e["seq"] for e in body["events"]] == [1, 2, 3] and body["last_seq"] == 3
        assert f"runner_id={runner} status=ready" in body["events"][2]["summary"]

        newer = (await client.get("/events", params={"after_seq": 2})).json()["events"]
        assert [e["kind"] for e in newer] == ["RunnerStatusUpdated"]
        only = (await client.get("/events", params={"kind": ["InstanceCreated"]})).json()
        assert [e["kind"] for e in only["events"]] == ["InstanceCreated"]
        assert len((await client.get("/events", params={"limit": 1})).json()["events"]) == 1
        assert (await client.get("/events", params={"limit": 0})).status_code == 400
