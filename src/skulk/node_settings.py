"""The settings each part of a node takes, built once from the node's flags."""

from skulk.master.settings import MasterSettings
from skulk.node_config import NodeConfig
from skulk.worker.engine_threads import engine_threads_here
from skulk.worker.runner.deadlines import RunnerDeadlines
from skulk.worker.wiring import WorkerSettings


def master_settings(config: NodeConfig) -> MasterSettings:
    return MasterSettings(quorum=config.quorum, keep_alive_seconds=config.keep_alive_seconds,
                          settle_grace_seconds=config.settle_grace_seconds)


def worker_settings(config: NodeConfig) -> WorkerSettings:
    return WorkerSettings(
        engine_threads=config.engine_threads or engine_threads_here(config.run_api),
        batching=config.batching, native_stream=config.native_stream,
        node_engine_options=config.engine_options,
        deadlines=RunnerDeadlines.scaled(config.runner_deadline_seconds))
