"""`skulk place MODEL`: place a model, then follow it until it is ready or gone.

The node answers once the master placed the instance, long before its weights are fetched
and loaded; a placement that then fails (no weights reachable, a runner that cannot load)
is removed with a reason. So the command follows the instance, prints a line whenever a
rank moves on, and ends with the outcome: exit 0 once every rank serves, 1 with the
master's reason once it is removed (following a replacement the master placed instead).
"""

import argparse
import sys
import time
from typing import Any, get_args

from skulk.cli.argument_types import positive_int
from skulk.cli.node_http import print_error, request_node
from skulk.cli.units import layers_text, size_text
from skulk.shared.types.commands import PlacementPreference
from skulk.shared.types.instances import Sharding
from skulk.shared.types.model_cards import EngineName

POLL_SECONDS = 0.5
# Fetch progress is shown in steps of this fraction, not on every poll.
FETCH_STEP = 0.1
ENGINES: tuple[EngineName, ...] = get_args(EngineName)  # the engines placement may pin
SHARDINGS: tuple[Sharding, ...] = get_args(Sharding)
PREFERENCES: tuple[PlacementPreference, ...] = get_args(PlacementPreference)
INTERRUPTED = 130


def add_place_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("model", help="a model id or alias (`skulk models list` shows them)")
    parser.add_argument("--min-nodes", type=positive_int, default=1, metavar="N",
                        help="use at least N nodes, split across them (default 1: the "
                             "fewest that hold it)")
    parser.add_argument("--engine", choices=ENGINES, default=None,
                        help="pin an engine (default: llama_cpp when the model fits whole "
                             "on one node, mlx when it must be split)")
    parser.add_argument("--sharding", choices=SHARDINGS, default="pipeline",
                        help="how to split it: pipeline by layers, tensor by attention "
                             "heads (default pipeline)")
    parser.add_argument("--prefer", choices=PREFERENCES, default="auto",
                        help="auto: the narrowest placement that fits, unless a wider one "
                             "of the same engine over machines that run nothing else is "
                             "predicted, from measurements, to decode at least 1.5x faster "
                             "(a split by heads on a fast link); fewest_nodes: the "
                             "narrowest placement that fits, split as --sharding says; "
                             "speed: of every placement that fits (one node, a pipeline or "
                             "a split by heads, over --min-nodes or more), the one "
                             "predicted to decode fastest from the nodes' measured decode "
                             "constants and links (default auto)")
    parser.add_argument("--exclude", action="append", default=[], metavar="NODE",
                        help="do not use NODE (repeatable; `skulk status` lists node ids)")
    parser.add_argument("--wait", action=argparse.BooleanOptionalAction, default=True,
                        help="follow the instance until it is ready (exit 0) or removed "
                             "(exit 1, with the reason); --no-wait returns once it is "
                             "placed (default: wait)")


def place(url: str, args: argparse.Namespace) -> int:
    """Place `args.model` as the flags ask; with `args.wait`, follow it to its outcome."""
    response = request_node("POST", f"{url}/place_instance", json={
        "model_id": args.model, "engine": args.engine, "sharding": args.sharding,
        "min_nodes": args.min_nodes, "excluded_nodes": args.exclude, "prefer": args.prefer})
    if response.status_code >= 300:
        return print_error(response)
    instance = response.json()
    if not args.wait:
        print(f"placed {instance['model_id']} as instance {instance['instance_id']}")
        return 0
    try:
        return follow(url, instance)
    except KeyboardInterrupt:
        print(f"\nstopped waiting; instance {instance['instance_id']} goes on (`skulk "
              f"status` shows it)", file=sys.stderr)
        return INTERRUPTED


def follow(url: str, instance: dict[str, Any]) -> int:
    """Print each rank's progress until the instance is ready or removed for good."""
    print(placed_text(instance))
    shown: dict[int, str] = {}
    while True:
        for rank in instance["ranks"]:
            line = rank_text(rank)
            if shown.get(rank["rank"]) != line:
                shown[rank["rank"]] = line
                print(f"  {line}", flush=True)
        if instance["status"] == "ready":
            print(f"ready: {instance['model_id']} as instance {instance['instance_id']}")
            return 0
        time.sleep(POLL_SECONDS)
        response = request_node("GET", f"{url}/instance/{instance['instance_id']}")
        if response.status_code == 200:
            instance = response.json()
            continue
        if response.status_code != 410:
            return print_error(response)
        removal = request_node("GET", f"{url}/instance/{instance['instance_id']}/removal")
        if removal.status_code != 200:
            return print_error(response)
        replacement = _replacement(url, removal.json())
        if replacement is None:
            print(f"skulk: placing {instance['model_id']} failed: instance "
                  f"{instance['instance_id']} was removed: {removal.json()['reason']}",
                  file=sys.stderr)
            return 1
        instance, shown = replacement, {}
        print(placed_text(instance))


def _replacement(url: str, removal: dict[str, Any]) -> dict[str, Any] | None:
    """The instance placed in place of a removed one, when there is one to follow."""
    if removal["replaced_by"] is None:
        return None
    print(f"  instance {removal['instance_id']} was removed: {removal['reason']}")
    response = request_node("GET", f"{url}/instance/{removal['replaced_by']}")
    return response.json() if response.status_code == 200 else None


def placed_text(instance: dict[str, Any]) -> str:
    width = len(instance["ranks"])
    nodes = f"{width} nodes" if width > 1 else f"node {instance['ranks'][0]['node_id']}"
    return (f"placed {instance['model_id']} as instance {instance['instance_id']} on "
            f"{nodes} ({instance['engine']}); waiting until it is ready")


def rank_text(rank: dict[str, Any]) -> str:
    """`rank 0 on node-a, layers 0–14: fetching 40%, 39.1 MiB of 98 MiB from hub R`."""
    where = f"rank {rank['rank']} on {rank['node_id']}, " \
            f"{layers_text(rank['start_layer'], rank['end_layer'])}"
    status = rank["runner_status"]
    fetch = rank.get("fetch")
    if fetch and fetch["total_bytes"]:
        share = fetch["done_bytes"] / fetch["total_bytes"]
        stepped = int(share / FETCH_STEP) * FETCH_STEP
        status = (f"fetching from {fetch['source']}, {stepped:.0%} of "
                  f"{size_text(fetch['total_bytes'])}")
    elif rank.get("error"):
        status = f"failed: {rank['error']}"
    return f"{where}: {status}"
