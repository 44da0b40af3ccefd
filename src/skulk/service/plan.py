"""What `skulk service install|uninstall|status` does, as a list of steps: planned by
pure functions, carried out (or, with `--dry-run`, printed) by `run_steps`."""

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from skulk.service.files import (
    LAUNCHD_LABEL,
    UNIT_PATH,
    ServiceConfig,
    environment_file,
    launchd_plist,
    launchd_plist_path,
    systemd_unit,
)

Platform = Literal["linux", "macos"]


@dataclass(frozen=True)
class WriteFile:
    path: Path
    content: bytes
    mode: int = 0o644
    keep_existing: bool = False  # an operator's edited flags survive a reinstall


@dataclass(frozen=True)
class Run:
    argv: tuple[str, ...]
    unless: tuple[str, ...] | None = None  # skipped when this command succeeds
    may_fail: bool = False


@dataclass(frozen=True)
class Remove:
    path: Path


Step = WriteFile | Run | Remove


def linux_install(config: ServiceConfig, start: bool) -> list[Step]:
    user = config.user
    return [
        Run(("useradd", "--system", "--user-group", "--home-dir", str(config.data_dir),
             "--no-create-home", "--shell", "/usr/sbin/nologin", user),
            unless=("getent", "passwd", user)),
        Run(("install", "-d", "-m", "0750", "-o", user, "-g", user, str(config.data_dir))),
        WriteFile(config.env_path, environment_file(config).encode(), 0o640,
                  keep_existing=True),
        WriteFile(UNIT_PATH, systemd_unit(config).encode()),
        Run(("systemctl", "daemon-reload")),
        Run(("systemctl", "enable", *(("--now",) if start else ()), "skulk.service")),
    ]


def linux_uninstall() -> list[Step]:
    return [Run(("systemctl", "disable", "--now", "skulk.service"), may_fail=True),
            Remove(UNIT_PATH), Run(("systemctl", "daemon-reload"))]


def macos_install(config: ServiceConfig, home: Path, uid: int, start: bool) -> list[Step]:
    plist = launchd_plist_path(home)
    steps: list[Step] = [
        Run(("mkdir", "-p", str(home / "Library" / "Logs"))),
        WriteFile(plist, launchd_plist(config, home)),
    ]
    if start:
        steps.append(Run(("launchctl", "bootstrap", f"gui/{uid}", str(plist))))
    return steps


def macos_uninstall(home: Path, uid: int) -> list[Step]:
    return [Run(("launchctl", "bootout", f"gui/{uid}/{LAUNCHD_LABEL}"), may_fail=True),
            Remove(launchd_plist_path(home))]


def status_command(platform: Platform, uid: int) -> tuple[str, ...]:
    if platform == "macos":
        return ("launchctl", "print", f"gui/{uid}/{LAUNCHD_LABEL}")
    return ("systemctl", "status", "--no-pager", "skulk.service")


def describe(step: Step) -> str:
    """One step as the dry run prints it (a file is shown with its content)."""
    match step:
        case WriteFile(path=path, content=content, mode=mode, keep_existing=keep):
            note = ", unless it exists" if keep else ""
            return f"write {path} (mode {mode:o}{note}):\n" + "\n".join(
                f"    {line}" for line in content.decode().splitlines())
        case Run(argv=argv, unless=unless):
            condition = f"   (unless `{' '.join(unless)}` succeeds)" if unless else ""
            return f"run: {' '.join(argv)}{condition}"
        case Remove(path=path):
            return f"remove {path}"


def run_steps(steps: list[Step]) -> None:
    """Carry the steps out in order; a failing command stops with what failed."""
    for step in steps:
        match step:
            case WriteFile(path=path, content=content, mode=mode, keep_existing=keep):
                if keep and path.exists():
                    print(f"kept {path}")
                    continue
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(content)
                path.chmod(mode)
                print(f"wrote {path}")
            case Run(argv=argv, unless=unless, may_fail=may_fail):
                if unless and subprocess.run(unless, capture_output=True).returncode == 0:
                    continue
                print(f"run: {' '.join(argv)}")
                if subprocess.run(argv).returncode != 0 and not may_fail:
                    raise RuntimeError(f"`{' '.join(argv)}` failed")
            case Remove(path=path):
                if path.exists():
                    path.unlink()
                    print(f"removed {path}")


def this_platform() -> Platform | None:
    if sys.platform.startswith("linux"):
        return "linux"
    return "macos" if sys.platform == "darwin" else None


def installed_executable() -> Path:
    """The `skulk` program beside this Python (the venv Skulk is installed in)."""
    beside = Path(sys.executable).parent / "skulk"
    found = beside if beside.exists() else shutil.which("skulk")
    return Path(found).resolve() if found else beside


def is_root() -> bool:
    return os.geteuid() == 0
