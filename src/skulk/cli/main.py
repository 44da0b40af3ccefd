"""`skulk`: start a node (`skulk run`, or bare `skulk`), or talk to a running one."""

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from skulk.cli import node_commands, node_http
from skulk.cli.chat import add_chat_arguments, chat
from skulk.cli.cluster import add_cluster_arguments, run_cluster
from skulk.cli.completion import SHELLS, completion_script
from skulk.cli.doctor import add_doctor_arguments, run_doctor
from skulk.cli.models_add import add_add_arguments, run_add
from skulk.cli.models_import import add_import_arguments, run_import
from skulk.cli.models_list import list_models
from skulk.cli.models_pull import add_pull_arguments, run_pull
from skulk.cli.models_remove import add_remove_arguments, run_remove
from skulk.cli.node_commands import add_logs_arguments
from skulk.cli.place import add_place_arguments, place
from skulk.cli.run_arguments import add_run_arguments
from skulk.cli.service import add_service_arguments, run_service
from skulk.paths import default_data_dir
from skulk.versions import version_text, versions

DEFAULT_URL = "http://127.0.0.1:52415"
# What a process killed by SIGPIPE reports: the reader of its output went away.
CLOSED_PIPE_EXIT = 141
USAGE_EXIT = 2


class _Parser(argparse.ArgumentParser):
    """Refuses a bad command line in one line (argparse prints the whole usage first,
    dozens of lines for `skulk run`), naming the flag and where the flags are listed."""

    def error(self, message: str) -> NoReturn:
        self.exit(USAGE_EXIT, f"{self.prog}: {message} (`{self.prog} --help` lists what it "
                              "takes)\n")


class _PrintVersions(argparse.Action):
    """`--version`: found only when asked (it runs git and reads package metadata)."""

    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS,
                 default: str = argparse.SUPPRESS, help: str | None = None) -> None:
        super().__init__(option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: object, option_string: str | None = None) -> None:
        from skulk.worker.engines.registry import native_versions  # only --version reads it
        print(version_text(versions(native_versions())))
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="skulk", description="Run language models across the machines you own.")
    parser.add_argument("--version", action=_PrintVersions,
                        help="print the versions of Skulk, its checkout and its engines")
    commands = parser.add_subparsers(dest="command")
    add_run_arguments(commands.add_parser("run", help="start a node (the default)"))

    def with_url(name: str, help: str) -> argparse.ArgumentParser:
        sub = commands.add_parser(name, help=help)
        sub.add_argument("--url", default=DEFAULT_URL,
                         help=f"API of a running node (default {DEFAULT_URL})")
        return sub

    with_url("status", "show the cluster's nodes, instances and tasks").add_argument(
        "--all", action="store_true", dest="every_node",
        help="list every node (a cluster of more than 24 lists only those worth a look)")
    add_cluster_arguments(commands.add_parser(
        "cluster", help="the cluster's join token; expel a member"))
    models = commands.add_parser(
        "models", help="list, add, remove, pull or import the models this node knows")
    models.add_argument("--data-dir", type=Path, default=None, help="node data dir")
    model_actions = models.add_subparsers(dest="action")
    listing = model_actions.add_parser(
        "list", help="the catalogue: each model, its formats and sizes, what this node holds")
    listing.add_argument("--data-dir", type=Path, default=argparse.SUPPRESS, help="node data dir")
    listing.add_argument("--cluster", action="store_true",
                         help="what every node's store holds, through a running node")
    listing.add_argument("--url", default="http://127.0.0.1:52415",
                         help="API of a running node (with --cluster)")
    add_import_arguments(model_actions.add_parser(
        "import", help="turn a GGUF file or Hugging Face directory into an MLX model"))
    add_pull_arguments(model_actions.add_parser(
        "pull", help="fetch a model from the Hugging Face hub into this node's store"))
    add_add_arguments(model_actions.add_parser(
        "add", help="put a .gguf file or Hugging Face directory into this node's store"))
    add_remove_arguments(model_actions.add_parser(
        "remove", help="take a model out of this node's store"))
    add_doctor_arguments(commands.add_parser(
        "doctor", help="check this machine (and a running node's cluster) for what would "
                       "slow or break Skulk"), DEFAULT_URL)
    commands.add_parser(
        "completion", help="print a shell completion script: source <(skulk completion bash)"
    ).add_argument("shell", choices=SHELLS)
    add_service_arguments(commands.add_parser(
        "service", help="run this node as a service that starts on boot (systemd on Linux, "
                        "launchd on macOS)"))
    add_logs_arguments(with_url("logs", "a running node's recent log lines; -f follows it"))
    with_url("stop", "shut a running node down gracefully (as Ctrl-C would)")
    add_place_arguments(with_url(
        "place", "place a model on the cluster and wait until it is ready"))
    add_chat_arguments(with_url("chat", "chat with a model in the terminal"))
    return parser


def subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """The parser's subcommands by name (`run`, `status`, ...)."""
    return {name: sub for action in parser._actions
            if isinstance(action, argparse._SubParsersAction)
            for name, sub in action.choices.items()}


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command `argv` asks for; every command's output may go to a pipe whose
    reader leaves early (`skulk status | head`), which ends it quietly."""
    try:
        code = _run(argv)
        sys.stdout.flush()  # here, not at exit, where a closed pipe could only be reported
    except BrokenPipeError:
        # Later writes, and the interpreter's flush at exit, must not fail again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return CLOSED_PIPE_EXIT
    return code


def _run(argv: Sequence[str] | None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    known = {*subcommands(parser), "-h", "--help", "--version"}
    if not args_list or args_list[0] not in known:
        args_list.insert(0, "run")  # bare `skulk [flags]` starts a node
    args = parser.parse_args(args_list)
    try:
        match args.command:
            case "run":
                # Imported here: the node, its API and engines take seconds to import,
                # which no other command should pay for.
                from skulk.cli.run import run_node
                return run_node(args)
            case "status":
                return node_http.status(args.url, every_node=args.every_node)
            case "cluster":
                return run_cluster(args)
            case "models" if args.action == "import":
                return run_import(args)
            case "models" if args.action == "pull":
                return run_pull(args)
            case "models" if args.action == "add":
                return run_add(args)
            case "models" if args.action == "remove":
                return run_remove(args)
            case "models" if getattr(args, "cluster", False):
                return node_http.models_in_cluster(args.url)
            case "models":
                return list_models(args.data_dir or default_data_dir())
            case "place":
                return place(args.url, args)
            case "completion":
                print(completion_script(args.shell, parser), end="")
                return 0
            case "doctor":
                return run_doctor(args)
            case "service":
                return run_service(args)
            case "logs":
                return node_commands.logs(args.url, args.level, args.component, args.lines,
                                          args.follow)
            case "stop":
                return node_commands.stop(args.url)
            case "chat":
                return chat(args.url, args.model, args.max_tokens, args.temperature)
    except node_http.NodeUnreachable as error:
        print(f"skulk: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
