"""The text of the service files `skulk service install` writes: pure functions of the
paths and flags, so tests parse exactly what would be installed."""

import plistlib
import shlex
from dataclasses import dataclass
from pathlib import Path

SERVICE_USER = "skulk"
DATA_DIR = Path("/var/lib/skulk")
UNIT_PATH = Path("/etc/systemd/system/skulk.service")
ENV_PATH = Path("/etc/skulk/skulk.env")
LAUNCHD_LABEL = "org.skulk.node"
# Loopback API, cluster transport on every interface: what a member of a LAN cluster needs.
DEFAULT_RUN_FLAGS = ("--api-host", "127.0.0.1", "--listen", "tcp/0.0.0.0:7447")


@dataclass(frozen=True)
class ServiceConfig:
    executable: Path  # the `skulk` program the service runs
    run_flags: tuple[str, ...] = DEFAULT_RUN_FLAGS
    user: str = SERVICE_USER
    data_dir: Path = DATA_DIR
    env_path: Path = ENV_PATH


def systemd_unit(config: ServiceConfig) -> str:
    """A hardened unit: its own user, read-only system, no home directories, a private
    /tmp, writes only under the data dir, restarts that back off."""
    return f"""\
# Skulk node, written by `skulk service install`. Flags for `skulk run` are in
# {config.env_path} (SKULK_ARGS); `systemctl restart skulk` after changing them.
[Unit]
Description=Skulk inference node
After=network-online.target
Wants=network-online.target
# Give up after 10 failed starts within 10 minutes (`systemctl reset-failed skulk`).
StartLimitIntervalSec=600
StartLimitBurst=10

[Service]
Type=simple
User={config.user}
Group={config.user}
Environment=SKULK_HOME={config.data_dir} HOME={config.data_dir}
EnvironmentFile=-{config.env_path}
ExecStart={config.executable} run $SKULK_ARGS
Restart=on-failure
RestartSec=5
# systemd 254 and newer lengthen the wait between restarts up to a minute; older ones
# ignore these two keys (with a log line) and wait RestartSec each time.
RestartSteps=5
RestartMaxDelaySec=60
# SIGTERM stops a node gracefully: runners shut down, the event log is synced.
KillSignal=SIGTERM
TimeoutStopSec=30
LimitNOFILE=65536
NoNewPrivileges=yes
ProtectSystem=strict
ProtectHome=yes
PrivateTmp=yes
ReadWritePaths={config.data_dir}
StateDirectory={config.data_dir.name}
StateDirectoryMode=0750
ProtectKernelTunables=yes
ProtectKernelModules=yes
ProtectControlGroups=yes
RestrictSUIDSGID=yes
LockPersonality=yes

[Install]
WantedBy=multi-user.target
"""


def environment_file(config: ServiceConfig) -> str:
    return f"""\
# Flags for `skulk run` (see `skulk run --help`), read by the skulk service at start.
SKULK_ARGS={shlex.join(config.run_flags)}
# Every route but /healthz then wants this key (clients send it as a bearer token):
#SKULK_API_KEY=
"""


def launchd_plist(config: ServiceConfig, home: Path) -> bytes:
    """A per-user launchd agent: starts at login, restarted when it exits with an error."""
    data_dir = home / "Library" / "Application Support" / "skulk"
    log = home / "Library" / "Logs" / "skulk.log"
    return plistlib.dumps({
        "Label": LAUNCHD_LABEL,
        "ProgramArguments": [str(config.executable), "run", *config.run_flags],
        "EnvironmentVariables": {"SKULK_HOME": str(data_dir)},
        "RunAtLoad": True,
        "KeepAlive": {"SuccessfulExit": False},
        "ThrottleInterval": 10,
        "ExitTimeOut": 30,
        "ProcessType": "Standard",
        "StandardOutPath": str(log),
        "StandardErrorPath": str(log),
    })


def launchd_plist_path(home: Path) -> Path:
    return home / "Library" / "LaunchAgents" / f"{LAUNCHD_LABEL}.plist"
