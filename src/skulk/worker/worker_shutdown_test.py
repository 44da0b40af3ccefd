"""The worker with real runner supervisors: a runner it stops is never left running."""

from pathlib import Path
from typing import Any

import anyio
import psutil
import pytest

from skulk.models.catalog import ModelCatalog
from skulk.shared.types.events import InstanceCreated, InstanceDeleted
from skulk.shared.types.ids import InstanceId
from skulk.testing import factories as f
from skulk.worker.runner.supervisor import RunnerSupervisor
from skulk.worker.worker import Worker
from skulk.worker.worker_test import Cluster


@pytest.mark.anyio
async def test_an_instance_deleted_while_its_runner_is_created_leaves_no_process(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # CI once saw a node run a runner of a deleted instance for minutes: the instance went
    # while the worker was still creating its runner (awaiting its weights), the worker
    # shut that runner down before the supervisor's task had spawned it, and the task then
    # spawned a process nobody would stop.
    cluster = Cluster()
    instance = f.instance()

    async def weights_while_the_instance_goes(*_: object) -> Path:
        cluster.apply(InstanceDeleted(instance_id=InstanceId(instance.instance_id),
                                      reason="deleted by its user"))
        return Path("/weights")
    monkeypatch.setattr("skulk.worker.worker.loadable_weights",
                        weights_while_the_instance_goes)
    supervisors: list[RunnerSupervisor] = []

    def real_supervisor(**kwargs: Any) -> RunnerSupervisor:
        supervisors.append(RunnerSupervisor(**kwargs))
        return supervisors[-1]
    running = Worker(node_id=f.NODE, replica=cluster.replica,
                     catalog=ModelCatalog.builtin(Path(".")), outbox=cluster.outbox(),
                     supervisor_factory=real_supervisor)
    try:
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(running.run)
            cluster.apply(InstanceCreated(instance=instance))
            with anyio.fail_after(30):
                while not supervisors:
                    await anyio.sleep(0.01)
            await anyio.sleep(1.0)  # a spawned runner would have a pid well within this
            tasks.cancel_scope.cancel()
        [supervisor] = supervisors
        assert supervisor.pid is None, "the deleted instance's runner was spawned"
        assert running.local_runners() == {}
    finally:
        for supervisor in supervisors:
            if supervisor.pid is not None and psutil.pid_exists(supervisor.pid):
                psutil.Process(supervisor.pid).kill()
