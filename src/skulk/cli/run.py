"""`skulk run`: the flags of a node and the code that starts it."""

import argparse
import ipaddress
import os
import signal
import sys
import traceback
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

import anyio
from loguru import logger

from skulk.api.log_buffer import LogBuffer
from skulk.api.security import API_KEY_ENV, ApiSecurity
from skulk.cli.endpoints import normalized_endpoint
from skulk.cli.preflight import check_before_start
from skulk.cli.run_arguments import DEFAULT_LISTEN
from skulk.cli.run_banner import up_banner
from skulk.node_config import NodeConfig
from skulk.node_identity import load_or_create_identity
from skulk.paths import default_data_dir
from skulk.routing.transport import Transport
from skulk.startup_failure import USAGE, StartupFailure, startup_failure_in
from skulk.trust.files import TlsFiles
from skulk.trust.revocations import load_revoked
from skulk.trust.setup import TrustError, trust_at_start
from skulk.worker.engines.node_options import parse_node_engine_options

if TYPE_CHECKING:
    from skulk.node import Node

STOPPING_NOTICE_SECONDS = 1.0
# The transport sends in the background: closing at once could drop the notice.
STOPPING_NOTICE_FLUSH_SECONDS = 0.25


def _configure_logging(verbosity: int) -> LogBuffer:
    """stderr at the level `-v`/`-q` ask for; the API's buffer (`skulk logs`) keeps INFO
    and up even under `-q`, and more with `-v`."""
    level = {-2: "ERROR", -1: "WARNING", 0: "INFO", 1: "DEBUG"}.get(
        max(-2, min(verbosity, 2)), "TRACE")
    logger.remove()
    logger.add(sys.stderr, level=level,
               format="<green>{time:HH:mm:ss.SSS}</green> {level: <7} {name}: {message}")
    buffer = LogBuffer()
    logger.add(buffer.sink, level=level if verbosity > 0 else "INFO")
    return buffer


def config_from_args(args: argparse.Namespace) -> NodeConfig:
    return NodeConfig(
        data_dir=args.data_dir or default_data_dir(),
        namespace=args.namespace,
        api_host=args.api_host,
        api_port=args.api_port,
        listen=[normalized_endpoint(e, "--listen") for e in args.listen] or [DEFAULT_LISTEN],
        peers=[normalized_endpoint(e, "--peer") for e in args.peer],
        run_api=not args.no_api,
        run_worker=not args.no_worker,
        serve=args.serve,
        auto_place=not args.no_auto_place,
        engine_threads=args.threads,
        runner_deadline_seconds=args.runner_deadline,
        max_queue=args.max_queue,
        max_tokens=args.max_tokens,
        keep_alive_seconds=args.keep_alive,
        queue_timeout_seconds=args.queue_timeout,
        memory_limit_bytes=(None if args.memory_limit is None
                            else int(args.memory_limit * 1024**3)),
        batching=args.batching,
        native_stream=args.native_stream,
        engine_options=parse_node_engine_options(args.engine_option),
        discover=args.discover,
        force_master=args.force_master,
        insecure=args.insecure,
        quorum=args.quorum,
        join=args.join,
        admit_port=args.admit_port,
        security=ApiSecurity(
            api_keys=frozenset(args.api_key) | keys_from_env(),
            cors_origins=args.cors_origin,
            max_body_bytes=int(args.max_body_mb * 1024 * 1024)),
    )


def keys_from_env() -> frozenset[str]:
    return frozenset(k.strip() for k in os.environ.get(API_KEY_ENV, "").split(",") if k.strip())


def warn_about_exposure(config: NodeConfig) -> None:
    """Say loudly at start what a stranger on the network could do to this node."""
    if config.insecure:
        logger.warning("\n  --insecure: cluster links are plain TCP and unchecked. Anyone "
                       "who reaches this node's port joins the cluster, reads every prompt "
                       "and answer, and can command it. Use only on a network you trust "
                       "completely.")
    if not is_loopback(config.api_host) and not config.security.api_keys:
        logger.warning("the API listens on {} without --api-key: anyone who reaches port {} "
                       "can use your models; give --api-key KEY (or $SKULK_API_KEY)",
                       config.api_host, config.api_port)


def is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


def uvloop_installed() -> bool:
    """uvloop (a dependency except on Windows) runs the node's event loop: the per-token
    path costs the node less CPU, which the runners' compute threads need."""
    import importlib.util

    return importlib.util.find_spec("uvloop") is not None


def run_node(args: argparse.Namespace) -> int:
    """Start a node and run it until a signal; a node that cannot start says why in one
    line (with its traceback under `-v`) and exits 2 for a usage mistake, 1 otherwise."""
    logs = _configure_logging(args.verbose - args.quiet)
    try:
        config = config_from_args(args)
        check_before_start(config)
        anyio.run(run_node_forever, config, None, logs,
                  backend_options={"use_uvloop": uvloop_installed()})
    except KeyboardInterrupt:
        pass
    except ValueError as error:  # a flag's value the config refused
        print(f"skulk run: {error}", file=sys.stderr)
        return USAGE
    except BaseException as error:
        failure = startup_failure_in(error)
        if failure is None:
            raise
        if args.verbose:
            traceback.print_exception(error)
        print(f"skulk run: {failure.message}", file=sys.stderr)
        return failure.exit_code
    return 0


async def open_zenoh(config: NodeConfig, tls: TlsFiles | None) -> Transport:
    """The cluster transport; Zenoh's refusal (a taken port, an address this machine
    lacks) becomes one line without the paths inside Zenoh's build tree."""
    from skulk.routing.zenoh_transport import ZenohTransport, ZenohUnavailable

    try:
        return await ZenohTransport.open(listen=config.listen, connect=config.peers,
                                         multicast_scouting=config.discover, tls=tls,
                                         denied=load_revoked(config.data_dir))
    except ZenohUnavailable as error:
        raise StartupFailure(f"the cluster transport cannot start: {error}; check "
                             "--listen (another node on this machine needs its own port)"
                             ) from error


async def run_node_forever(config: NodeConfig,
                           open_transport: Callable[[NodeConfig], Awaitable[Transport]] | None
                           = None, logs: LogBuffer | None = None) -> None:
    """Run a node until SIGINT, SIGTERM or `POST /v1/node/stop`, then shut it down
    cleanly."""
    from skulk.cluster.node_endpoints import bound_cluster_endpoints
    from skulk.node import Node  # seconds of imports a refused start need not wait for
    from skulk.worker.engine_threads import threads_explained

    warn_about_exposure(config)
    identity = load_or_create_identity(config.data_dir)
    try:
        trust = await trust_at_start(config.data_dir, identity, insecure=config.insecure,
                                     join=config.join, peers=config.peers,
                                     cluster_name=config.namespace)
    except TrustError as error:
        logger.error("{}", error)
        raise SystemExit(2) from error
    transport = (await open_transport(config) if open_transport else
                 await open_zenoh(config, trust.tls))
    node = Node(config, transport, trust=trust, logs=logs)
    asked_to_stop = False  # a crash is no stop on purpose: it leaves as lost
    try:
        async with anyio.create_task_group() as tasks:
            async def stop_on_signal() -> None:
                nonlocal asked_to_stop
                with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
                    async for received in signals:
                        logger.info("received {}, shutting down", signal.Signals(received).name)
                        asked_to_stop = True
                        tasks.cancel_scope.cancel()
                        return

            async def stop_when_asked() -> None:
                nonlocal asked_to_stop
                await node.stop_requested.wait()
                logger.info("asked to stop over the API, shutting down")
                asked_to_stop = True
                tasks.cancel_scope.cancel()

            tasks.start_soon(stop_on_signal)
            tasks.start_soon(stop_when_asked)
            tasks.start_soon(node.run)
            await node.ready.wait()
            logger.info("{}", up_banner(config, node.node_id,
                                        await bound_cluster_endpoints(transport),
                                        threads_explained(config.run_api)))
    finally:
        with anyio.CancelScope(shield=True):
            if asked_to_stop:
                await say_stopping(node)
            await transport.close()


async def say_stopping(node: "Node") -> None:
    """The node's last reading says it leaves on purpose; a shutdown does not wait long
    for it, nor stop on a transport already failing."""
    if node.links is None:
        return  # it never got as far as publishing readings
    with anyio.move_on_after(STOPPING_NOTICE_SECONDS):
        try:
            await node.links.say_stopping()
            await anyio.sleep(STOPPING_NOTICE_FLUSH_SECONDS)
        except Exception as error:
            logger.debug("could not say the node is stopping: {}", error)
