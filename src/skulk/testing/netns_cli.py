"""`python -m skulk.testing.netns`: test hosts by hand (the module's text has examples)."""

import argparse
import os
import sys
from collections import defaultdict

from skulk.testing import netns_commands as commands
from skulk.testing.netns import Hosts, HostsError, listed_namespaces, missing, sweep

HUMAN_RUN = "cli"


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="python -m skulk.testing.netns",
                                  description="Test hosts made of network namespaces.")
    top.add_argument("--run", default=HUMAN_RUN,
                     help=f"the name of the hosts to act on (default {HUMAN_RUN})")
    sub = top.add_subparsers(dest="action", required=True)
    sub.add_parser("up", help="make N hosts at 10.77.0.1..N").add_argument("count", type=int)
    sub.add_parser("down", help="remove the hosts")
    for name, text in (("cut", "two hosts stop hearing each other"),
                       ("heal", "undo a cut; with no hosts, heal everything")):
        action = sub.add_parser(name, help=text)
        action.add_argument("hosts", type=int, nargs=2 if name == "cut" else "*")
    for name, text in (("isolate", "unplug a host's link"), ("rejoin", "plug it back")):
        sub.add_parser(name, help=text).add_argument("host", type=int)
    rate = sub.add_parser("rate", help="cap a host's outgoing rate (tc tbf)")
    rate.add_argument("host", type=int)
    rate.add_argument("rate", help="e.g. 1gbit or 200mbit; off removes the cap")
    run = sub.add_parser("exec", help="run a command inside a host: exec I [--core C] -- ARGV")
    run.add_argument("host", type=int)
    run.add_argument("--core", type=int, help="pin it to this CPU (taskset)")
    sub.add_parser("list", help="every run's hosts on this machine")
    sub.add_parser("sweep", help="remove the hosts of runs whose process has ended")
    sub.add_parser("check", help="say what this machine lacks, if anything")
    return top


def parse(argv: list[str]) -> argparse.Namespace:
    """Our arguments, and in `command` whatever follows `--` (split off first: argparse
    reads a `--` inside a subcommand's arguments badly before Python 3.12)."""
    own, command = (argv[:argv.index("--")], argv[argv.index("--") + 1:]) if "--" in argv \
        else (argv, [])
    args = parser().parse_args(own)
    args.command = command
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse(sys.argv[1:] if argv is None else argv)
    if args.action == "check":
        reason = missing()
        print(reason or "ok")
        return 0 if reason is None else 1
    if (reason := missing()) is not None:
        print(f"cannot make test hosts: {reason}", file=sys.stderr)
        return 1
    try:
        return act(args)
    except (HostsError, ValueError) as error:
        print(error, file=sys.stderr)
        return 1


def act(args: argparse.Namespace) -> int:
    if args.action == "list":
        runs: dict[str, int] = defaultdict(int)
        listed = listed_namespaces()
        for name in listed:
            if (run := commands.run_of(name)) is not None:
                runs[run] = commands.host_count(run, listed)
        for run, count in sorted(runs.items()):
            print(f"{run}: {count} hosts")
        return 0
    if args.action == "sweep":
        for name in sweep():
            print(f"removed {name}")
        return 0
    if args.action == "up":
        hosts = Hosts(args.count, run=args.run)
        hosts.up()
        for host in range(hosts.count):
            print(f"host {host}: {hosts.address(host)} in {hosts.namespace(host)}")
        return 0
    hosts = Hosts.existing(args.run)
    if args.action == "down":
        hosts.down()
    elif args.action == "cut":
        hosts.cut(*args.hosts)
    elif args.action == "heal" and not args.hosts:
        hosts.heal_all()
    elif args.action == "heal":
        if len(args.hosts) != 2:
            raise ValueError("heal takes two hosts, or none to heal everything")
        hosts.heal(*args.hosts)
    elif args.action == "isolate":
        hosts.isolate(args.host)
    elif args.action == "rejoin":
        hosts.rejoin(args.host)
    elif args.action == "rate":
        hosts.rate(args.host, None if args.rate == "off" else args.rate)
    elif args.action == "exec":
        if not args.command:
            raise ValueError("exec needs a command after --")
        command = hosts.command(args.host, args.command, core=args.core)
        os.execvp(command[0], command)
    return 0
