"""`skulk run`'s flags, apart from the node they start: building the parser for any
command (`skulk status`, `skulk place`...) then imports no more than argparse, not the node,
its API and its engines, which cost every short command a second or more of start-up."""

import argparse
from pathlib import Path

from skulk.cli.argument_types import (
    finite_number,
    port,
    port_or_any,
    positive_int,
    positive_number,
    whole_number,
)

DEFAULT_LISTEN = "tcp/127.0.0.1:0"


def add_run_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--api-host", default="127.0.0.1", help="API bind address")
    parser.add_argument("--api-port", type=port, default=52415, help="API port (default 52415)")
    parser.add_argument("--data-dir", type=Path, default=None,
                        help="where the node keeps its id, event log and models "
                             "(default: $SKULK_HOME or the XDG data dir)")
    parser.add_argument("--listen", action="append", default=[],
                        help=f"cluster transport endpoint, e.g. tcp/0.0.0.0:7447 "
                             f"(default {DEFAULT_LISTEN}: loopback, any free port; the port "
                             f"bound is shown when the node is up and in `skulk status`)")
    parser.add_argument("--peer", action="append", default=[],
                        help="a peer's endpoint, e.g. tcp/10.0.0.2:7447 (repeatable)")
    parser.add_argument("--namespace", default="skulk",
                        help="cluster name; nodes only talk within one namespace (a "
                             "separation, not a secret: membership is the join token)")
    parser.add_argument("--join", metavar="TOKEN", default=None,
                        help="join the cluster whose first node printed TOKEN (needs "
                             "--peer naming that node); once joined, later starts need "
                             "no token")
    parser.add_argument("--admit-port", type=port_or_any, default=None,
                        help="on the node holding the cluster's authority: the port new "
                             "members present the join token on (default: the first "
                             "--listen port + 1, any free port when that is 0)")
    parser.add_argument("--quorum", choices=["available", "majority"], default="available",
                        help="what a side of a partition without a majority of the agreed "
                             "members does (a node restarted alone is such a side): "
                             "'available' (default) serves the models it holds and accepts "
                             "changes (placements, deletions), which it hands to the "
                             "majority's master when the partition heals; 'majority' "
                             "refuses changes and new requests with 503 and indexes nothing "
                             "until the partition heals")
    parser.add_argument("--insecure", action="store_true",
                        help="plain TCP between nodes and no membership check: anyone who "
                             "reaches the port is a member (labs and tests only)")
    parser.add_argument("--discover", action=argparse.BooleanOptionalAction, default=True,
                        help="find peers on the LAN by multicast scouting (default on); "
                             "--no-discover uses only --peer endpoints")
    parser.add_argument("--force-master", "-m", action="store_true",
                        help="win every election (use on one node at most)")
    parser.add_argument("--no-api", action="store_true", help="serve no HTTP API")
    parser.add_argument("--no-worker", action="store_true", help="run no models here")
    parser.add_argument("--serve", action="append", default=[], metavar="MODEL",
                        help="place MODEL once the node is up (repeatable)")
    parser.add_argument("--no-auto-place", action="store_true",
                        help="do not place a model when a request asks for an unplaced one")
    parser.add_argument("--runner-deadline", type=positive_number, default=None,
                        metavar="SECONDS",
                        help="kill a runner that has not reported this long after starting, "
                             "or not loaded within this plus its weights' read time at "
                             "20 MB/s, and place its instance elsewhere (default 60 s to "
                             "report, 120 s plus read time to load)")
    parser.add_argument("--max-queue", type=whole_number, default=None, metavar="N",
                        help="requests this node's API queues per instance beyond those "
                             "running; more get 429 with Retry-After (default 16 per slot "
                             "of the instance's batch)")
    parser.add_argument("--queue-timeout", type=positive_number, default=300.0,
                        metavar="SECONDS",
                        help="a request still queued after this long is refused with 503 "
                             "(default 300)")
    parser.add_argument("--max-tokens", type=positive_int, default=None, metavar="N",
                        help="the most tokens one request generates, whatever it asks "
                             "(default: up to the model's context); a request asking more "
                             "ends with finish reason 'length'")
    parser.add_argument("--keep-alive", type=finite_number, default=600.0, metavar="SECONDS",
                        help="remove an instance that served nothing this long (default "
                             "600; models placed with --serve stay; a request's keep_alive "
                             "overrides it for its instance; negative: never)")
    parser.add_argument("--threads", type=positive_int, default=None, metavar="N",
                        help="engine threads per runner (default: the physical cores, less "
                             "one on a node that serves the API, at least 1: runners that "
                             "share cores with other work slow to a crawl)")
    parser.add_argument("--memory-limit", type=positive_number, default=None, metavar="GIB",
                        help="lend models at most this much of the machine's memory (GiB): "
                             "placement sees no more, whatever else is free")
    parser.add_argument("--no-batching", dest="batching", action="store_false",
                        help="runners of models wholly on this node serve one request at "
                             "a time instead of batching concurrent requests together "
                             "(split models always batch: their ranks must agree)")
    parser.add_argument("--no-native-stream", dest="native_stream", action="store_false",
                        help="send every token of a stream taken on this node through the "
                             "node's Python, not from the native relay that reads the "
                             "runner's output (for comparison, or if the relay misbehaves)")
    parser.add_argument("--engine-option", action="append", default=[],
                        metavar="ENGINE.NAME=VALUE",
                        help="an option for every runner of ENGINE on this node, e.g. "
                             "mlx.max_draft=8 (repeatable; an unknown NAME is refused with "
                             "the list of the engine's options)")
    parser.add_argument("--api-key", action="append", default=[],
                        help="require this API key on every request but /healthz "
                             "(repeatable; also $SKULK_API_KEY, comma-separated)")
    parser.add_argument("--cors-origin", action="append", default=[],
                        help="let browser pages from this origin call the API (repeatable; "
                             "'*' for any)")
    parser.add_argument("--max-body-mb", type=positive_number, default=8.0, metavar="MIB",
                        help="largest request body accepted, in MiB (default 8)")
    parser.add_argument("-v", "--verbose", action="count", default=0, help="more logging")
    parser.add_argument("-q", "--quiet", action="count", default=0, help="less logging")

