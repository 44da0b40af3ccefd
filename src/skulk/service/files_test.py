"""The service files, parsed as systemd and launchd would read them."""

import configparser
import plistlib
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from skulk.service.files import (
    ServiceConfig,
    environment_file,
    launchd_plist,
    launchd_plist_path,
    systemd_unit,
)

REPOSITORY = Path(__file__).resolve().parents[3]
OPT = ServiceConfig(executable=Path("/opt/skulk/.venv/bin/skulk"))


def parse_unit(text: str) -> configparser.ConfigParser:
    unit = configparser.ConfigParser(interpolation=None, strict=True)
    unit.optionxform = str  # type: ignore[assignment, method-assign]
    unit.read_string(text)
    return unit


def test_the_unit_runs_skulk_as_its_own_user_hardened_with_backoff() -> None:
    unit = parse_unit(systemd_unit(OPT))
    service = unit["Service"]
    assert service["ExecStart"] == "/opt/skulk/.venv/bin/skulk run $SKULK_ARGS"
    assert service["User"] == service["Group"] == "skulk"
    assert service["EnvironmentFile"] == "-/etc/skulk/skulk.env"
    assert "SKULK_HOME=/var/lib/skulk" in service["Environment"].split()
    hardening = {"NoNewPrivileges": "yes", "ProtectSystem": "strict", "ProtectHome": "yes",
                 "PrivateTmp": "yes", "ReadWritePaths": "/var/lib/skulk",
                 "StateDirectory": "skulk"}
    assert {key: service[key] for key in hardening} == hardening
    assert service["Restart"] == "on-failure" and service["KillSignal"] == "SIGTERM"
    assert int(service["RestartMaxDelaySec"]) > int(service["RestartSec"]) > 0
    assert int(unit["Unit"]["StartLimitBurst"]) > 1
    assert unit["Unit"]["After"] == "network-online.target"
    assert unit["Install"]["WantedBy"] == "multi-user.target"


def test_the_checked_in_files_are_what_install_writes() -> None:
    deployment = REPOSITORY / "deployment"
    assert (deployment / "skulk.service").read_text() == systemd_unit(OPT)
    assert (deployment / "skulk.env").read_text() == environment_file(OPT)


def test_the_environment_file_carries_the_flags_as_systemd_splits_them() -> None:
    config = ServiceConfig(executable=OPT.executable,
                           run_flags=("--listen", "tcp/0.0.0.0:7447", "--namespace", "home"))
    [line] = [line for line in environment_file(config).splitlines()
              if line.startswith("SKULK_ARGS=")]
    assert line == "SKULK_ARGS=--listen tcp/0.0.0.0:7447 --namespace home"


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="no systemd-analyze")
def test_systemd_analyze_verifies_the_unit(tmp_path: Path) -> None:
    executable = tmp_path / "skulk"
    executable.write_text("#!/bin/sh\n")
    executable.chmod(0o755)
    path = tmp_path / "skulk.service"
    path.write_text(systemd_unit(ServiceConfig(executable=executable)))
    verified = subprocess.run(["systemd-analyze", "verify", str(path)], capture_output=True,
                              text=True, timeout=60)
    assert verified.returncode == 0, verified.stderr
    version = int(re.findall(r"systemd (\d+)", subprocess.run(
        ["systemd-analyze", "--version"], capture_output=True, text=True).stdout)[0])
    # Before systemd 254 the backoff keys are unknown: ignored, and only that is reported.
    tolerated = ("RestartSteps", "RestartMaxDelaySec") if version < 254 else ()
    complaints = [line for line in verified.stderr.splitlines()
                  if line.strip() and not any(f"'{key}'" in line for key in tolerated)]
    assert complaints == []


def test_the_launchd_agent_runs_skulk_at_login_and_restarts_it_after_a_failure() -> None:
    home = Path("/Users/ada")
    agent = plistlib.loads(launchd_plist(OPT, home))
    assert agent["Label"] == "org.skulk.node"
    assert agent["ProgramArguments"] == ["/opt/skulk/.venv/bin/skulk", "run", "--api-host",
                                         "127.0.0.1", "--listen", "tcp/0.0.0.0:7447"]
    assert agent["RunAtLoad"] is True and agent["KeepAlive"] == {"SuccessfulExit": False}
    assert agent["EnvironmentVariables"]["SKULK_HOME"] == (
        "/Users/ada/Library/Application Support/skulk")
    assert agent["StandardErrorPath"] == "/Users/ada/Library/Logs/skulk.log"
    assert launchd_plist_path(home) == Path(
        "/Users/ada/Library/LaunchAgents/org.skulk.node.plist")
