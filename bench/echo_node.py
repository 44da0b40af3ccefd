"""`skulk run` with the echo test engine in its runners, for serving benchmarks.

Takes the same flags as `skulk run`, plus `--echo-step-ms` (each engine step's pause: 0
is an engine that costs nothing) and `--echo-batch` (requests per step). The model it
serves is placed as usual; its runners echo the prompt's words instead of decoding, so
what a benchmark measures is the node's serving path alone.

    .venv/bin/python bench/echo_node.py --serve smollm2-135m --api-port 8000 ...
"""

import argparse
import cProfile
import signal
import sys
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from skulk.api.log_buffer import LogBuffer  # noqa: E402
from skulk.cli.run import (  # noqa: E402
    _configure_logging,
    config_from_args,
    open_zenoh,
    uvloop_installed,
)
from skulk.cli.run_arguments import add_run_arguments  # noqa: E402
from skulk.node import Node  # noqa: E402
from skulk.node_config import NodeConfig  # noqa: E402
from skulk.node_identity import load_or_create_identity  # noqa: E402
from skulk.testing.echo.description import use_test_engines  # noqa: E402
from skulk.testing.runners import echo_instead  # noqa: E402
from skulk.trust.setup import trust_at_start  # noqa: E402


async def serve(config: NodeConfig, step_seconds: float, batch: int, logs: LogBuffer,
                local_delivery: bool) -> None:
    """Run the node until SIGTERM or SIGINT, its runners echoing."""
    identity = load_or_create_identity(config.data_dir)
    trust = await trust_at_start(config.data_dir, identity, insecure=config.insecure,
                                 join=config.join, peers=config.peers,
                                 cluster_name=config.namespace)
    transport = await open_zenoh(config, trust.tls)
    node = Node(config, transport, trust=trust, logs=logs, local_delivery=local_delivery,
                supervisor_factory=echo_instead(delay=step_seconds, max_batch=batch))
    try:
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(node.run)
            with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
                async for _ in signals:
                    tasks.cancel_scope.cancel()
                    break
    finally:
        with anyio.CancelScope(shield=True):
            await transport.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    add_run_arguments(parser)
    parser.add_argument("--echo-step-ms", type=float, default=0.0)
    parser.add_argument("--echo-batch", type=int, default=512)
    parser.add_argument("--no-local-delivery", dest="local_delivery", action="store_false",
                        help="the node's own messages round-trip through the transport")
    parser.add_argument("--profile", type=Path, default=None,
                        help="write the node's cProfile statistics here when it stops")
    args = parser.parse_args()
    use_test_engines()
    logs = _configure_logging(args.verbose - args.quiet)  # as `skulk run` logs: INFO
    profile = cProfile.Profile() if args.profile else None
    if profile is not None:
        profile.enable()
    try:
        anyio.run(serve, config_from_args(args), args.echo_step_ms / 1000, args.echo_batch,
                  logs, args.local_delivery, backend_options={"use_uvloop": uvloop_installed()})
    finally:
        if profile is not None:
            profile.disable()
            profile.dump_stats(args.profile)


if __name__ == "__main__":
    main()
