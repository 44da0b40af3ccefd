"""`skulk cluster token` (the join token of the cluster this machine's node made) and
`skulk cluster revoke NODE` (expel a member, through a running node)."""

import argparse
import sys
from pathlib import Path

from skulk.cli import node_http
from skulk.paths import default_data_dir
from skulk.trust.setup import TrustError, current_token, rotate_join_secret


def add_cluster_arguments(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="action", required=True)
    token = actions.add_parser(
        "token", help="print the join token (on the node that made the cluster)")
    token.add_argument("--data-dir", type=Path, default=None, help="node data dir")
    token.add_argument("--rotate", action="store_true",
                       help="make a new token first: the old one stops admitting machines "
                            "(members stay members)")
    revoke = actions.add_parser("revoke", help="expel a member (see `skulk status`)")
    revoke.add_argument("node_id")
    revoke.add_argument("--url", default="http://127.0.0.1:52415", help="API of a running node")
    forget = actions.add_parser("forget", help="drop a member gone for good from the agreed "
                                "membership, so the rest is a majority again")
    forget.add_argument("node_id")
    forget.add_argument("--url", default="http://127.0.0.1:52415", help="API of a running node")


def run_cluster(args: argparse.Namespace) -> int:
    if args.action == "revoke":
        return node_http.revoke(args.url, args.node_id)
    if args.action == "forget":
        return node_http.forget(args.url, args.node_id)
    data_dir = args.data_dir or default_data_dir()
    try:
        if args.rotate:
            rotate_join_secret(data_dir)
        token = current_token(data_dir)
    except TrustError as error:
        print(f"skulk: {error}", file=sys.stderr)
        return 2
    print(token.encode())
    return 0
