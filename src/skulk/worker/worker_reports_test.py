"""What the worker tells a master on its own: each runner's status again when the node
follows a new master session (whose State may lack them). The fakes are worker_test's."""

import anyio
import pytest

from skulk.shared.types.events import (
    Event,
    IndexedEvent,
    InstanceCreated,
    RunnerStatusUpdated,
    StateSnapshotHydrated,
)
from skulk.shared.types.ids import NodeId, SessionId
from skulk.shared.types.state import State
from skulk.testing import factories as f
from skulk.worker.worker_test import Cluster, FakeSupervisor, reset_fakes, worker

__all__ = ["reset_fakes"]  # autouse: every test here starts with no fakes made


@pytest.mark.anyio
async def test_a_new_master_session_hears_each_runners_status_again() -> None:
    cluster = Cluster()
    published: list[Event] = []

    async def publish(event: Event) -> None:
        published.append(event)
        cluster.apply(event)

    cluster.publish_event = publish  # type: ignore[method-assign]
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(worker(cluster).run)
        cluster.apply(InstanceCreated(instance=f.instance()))
        with anyio.fail_after(5):
            while not any(isinstance(e, RunnerStatusUpdated) for e in published):
                await anyio.sleep(0.01)
        [runner_id] = cluster.replica.state.runners
        published.clear()
        # Another master's session, whose State has never heard of the runner.
        cluster.replica.receive(IndexedEvent(master_node=NodeId("m2"), index=0,
                                             session=SessionId("s2"),
                                             event=StateSnapshotHydrated(state=State())))
        with anyio.fail_after(5):
            while not published:
                await anyio.sleep(0.01)
        tasks.cancel_scope.cancel()
    [fake] = FakeSupervisor.created
    assert fake.status is not None
    assert published == [RunnerStatusUpdated(runner_id=runner_id, status=fake.status)]
