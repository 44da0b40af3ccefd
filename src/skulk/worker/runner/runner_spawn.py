"""A runner subprocess started with its three pipes (`RunnerSupervisor.run`'s first step).

The runner gets one end of each pipe: its inbox's read end, its messages' write end and its
standard output's write end. The parent keeps the other ends as plain file descriptors of
its own, and closes its copies of the runner's ends, so that the runner's exit reads as
end of file on both pipes that come from it.
"""

import multiprocessing
import os
from dataclasses import dataclass
from multiprocessing.process import BaseProcess

from skulk.shared.types.ids import RunnerId
from skulk.worker.engines.description import EngineDescription
from skulk.worker.engines.protocol import EngineConfig
from skulk.worker.engines.registry import spawn_environment
from skulk.worker.runner.bootstrap import entrypoint


@dataclass(frozen=True)
class SpawnedRunner:
    """The started process and the parent's ends of its pipes (the caller's to close)."""

    process: BaseProcess
    inbox: int  # write end: what the runner reads between steps
    output: int  # read end: the runner's messages
    stdout: int  # read end: what the runner prints


def spawn_runner(engine: EngineDescription, config: EngineConfig,
                 runner_id: RunnerId) -> SpawnedRunner:
    context = multiprocessing.get_context("spawn")
    inbox_end, inbox_writer = context.Pipe(duplex=False)
    output_end, runner_end = context.Pipe(duplex=False)
    stdout_end, runner_stdout = context.Pipe(duplex=False)
    process = context.Process(
        target=entrypoint, name=f"skulk-runner-{runner_id}", daemon=True,
        args=(engine, config, inbox_end, runner_end, os.getpid(), runner_stdout))
    with spawn_environment(engine, config):  # e.g. OpenBLAS preloaded
        process.start()
    for runners in (inbox_end, runner_end, runner_stdout):  # the runner holds these now
        runners.close()
    ours = (inbox_writer, output_end, stdout_end)
    inbox, output, stdout = (os.dup(end.fileno()) for end in ours)
    for end in ours:
        end.close()
    return SpawnedRunner(process, inbox, output, stdout)
