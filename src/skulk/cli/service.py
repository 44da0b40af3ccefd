"""`skulk service install|uninstall|status`: run this node as a service that starts on
boot (systemd, as its own user, on Linux) or at login (a launchd agent on macOS)."""

import argparse
import os
import shlex
import subprocess
import sys
from pathlib import Path

from skulk.service.files import DEFAULT_RUN_FLAGS, ServiceConfig
from skulk.service.plan import (
    Platform,
    Step,
    describe,
    installed_executable,
    is_root,
    linux_install,
    linux_uninstall,
    macos_install,
    macos_uninstall,
    run_steps,
    status_command,
    this_platform,
)

# ProtectHome hides these from the service: a Skulk installed there cannot start.
_HIDDEN_BY_PROTECT_HOME = (Path("/home"), Path("/root"), Path("/run/user"))


def add_service_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("action", choices=("install", "uninstall", "status"))
    parser.add_argument("--dry-run", action="store_true",
                        help="print what would be done (files with their content) and do "
                             "nothing")
    parser.add_argument("--flags", default=shlex.join(DEFAULT_RUN_FLAGS),
                        help="flags for `skulk run`, as one string (default: %(default)s); "
                             "on Linux they go to /etc/skulk/skulk.env")
    parser.add_argument("--executable", type=Path, default=None,
                        help="the skulk program the service runs (default: the one beside "
                             "this Python)")
    parser.add_argument("--no-start", action="store_true",
                        help="enable the service for the next boot without starting it now")
    parser.add_argument("--platform", choices=("linux", "macos"), default=None,
                        help="plan for this system instead of the running one (with "
                             "--dry-run)")


def plan(args: argparse.Namespace, platform: Platform, home: Path, uid: int) -> list[Step]:
    config = ServiceConfig(executable=args.executable or installed_executable(),
                           run_flags=tuple(shlex.split(args.flags)))
    start = not args.no_start
    if platform == "linux":
        if args.action == "install":
            return linux_install(config, start)
        return linux_uninstall()
    if args.action == "install":
        return macos_install(config, home, uid, start)
    return macos_uninstall(home, uid)


def _refusal(args: argparse.Namespace, platform: Platform, executable: Path) -> str | None:
    if platform == "linux" and args.action == "install" and any(
            executable.is_relative_to(hidden) for hidden in _HIDDEN_BY_PROTECT_HOME):
        return (f"{executable} is under a home directory, which the hardened service cannot "
                "see (ProtectHome): install Skulk elsewhere, e.g. `git clone ... /opt/skulk "
                "&& make -C /opt/skulk install`, then run /opt/skulk/.venv/bin/skulk service "
                "install")
    if platform == "linux" and not args.dry_run and not is_root():
        return "installing a system service needs root: run it with sudo (or --dry-run)"
    return None


def run_service(args: argparse.Namespace) -> int:
    platform = args.platform or this_platform()
    if platform is None:
        print(f"skulk: no service manager Skulk knows on {sys.platform} (systemd on Linux, "
              "launchd on macOS)", file=sys.stderr)
        return 1
    uid = os.getuid()
    if args.action == "status":
        command = status_command(platform, uid)
        if args.dry_run:
            print(f"run: {' '.join(command)}")
            return 0
        try:
            return subprocess.run(command).returncode
        except OSError as error:
            print(f"skulk: cannot run {command[0]}: {error}", file=sys.stderr)
            return 1
    executable = (args.executable or installed_executable()).absolute()
    refusal = _refusal(args, platform, executable)
    if refusal is not None:
        print(f"skulk: {refusal}", file=sys.stderr)
        return 1
    steps = plan(args, platform, Path.home(), uid)
    if args.dry_run:
        print("\n".join(describe(step) for step in steps))
        return 0
    try:
        run_steps(steps)
    except (RuntimeError, OSError) as error:
        print(f"skulk: {error}", file=sys.stderr)
        return 1
    if args.action == "install" and platform == "linux":
        print("the node runs as user skulk with its data in /var/lib/skulk; its log: "
              "journalctl -u skulk -f")
    return 0
