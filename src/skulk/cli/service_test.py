"""`skulk service`: what install, uninstall and status would do, shown by --dry-run."""

import plistlib
from pathlib import Path

import pytest

from skulk.cli.main import main
from skulk.service.files import ServiceConfig, environment_file
from skulk.service.plan import WriteFile, run_steps


def dry_run(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    assert main(["service", *args, "--dry-run"]) == 0
    return capsys.readouterr().out


def test_linux_install_creates_the_user_writes_the_files_and_enables_the_unit(
        capsys: pytest.CaptureFixture[str]) -> None:
    out = dry_run(capsys, "install", "--platform", "linux",
                  "--executable", "/opt/skulk/.venv/bin/skulk",
                  "--flags", "--listen tcp/0.0.0.0:7447 --peer tcp/10.0.0.2:7447")
    lines = out.splitlines()
    assert lines[0].startswith("run: useradd --system") and "(unless `getent passwd skulk`" \
        in lines[0]
    assert "write /etc/skulk/skulk.env (mode 640, unless it exists):" in out
    assert "    SKULK_ARGS=--listen tcp/0.0.0.0:7447 --peer tcp/10.0.0.2:7447" in lines
    assert "write /etc/systemd/system/skulk.service (mode 644):" in out
    assert "    ExecStart=/opt/skulk/.venv/bin/skulk run $SKULK_ARGS" in lines
    assert lines[-2:] == ["run: systemctl daemon-reload",
                          "run: systemctl enable --now skulk.service"]


def test_no_start_enables_for_the_next_boot_only(capsys: pytest.CaptureFixture[str]) -> None:
    out = dry_run(capsys, "install", "--platform", "linux", "--no-start",
                  "--executable", "/opt/skulk/.venv/bin/skulk")
    assert out.splitlines()[-1] == "run: systemctl enable skulk.service"


def test_linux_uninstall_and_status(capsys: pytest.CaptureFixture[str]) -> None:
    assert dry_run(capsys, "uninstall", "--platform", "linux").splitlines() == [
        "run: systemctl disable --now skulk.service",
        "remove /etc/systemd/system/skulk.service", "run: systemctl daemon-reload"]
    assert dry_run(capsys, "status", "--platform", "linux").strip() == (
        "run: systemctl status --no-pager skulk.service")


def test_macos_install_writes_a_launch_agent_and_bootstraps_it(
        capsys: pytest.CaptureFixture[str]) -> None:
    out = dry_run(capsys, "install", "--platform", "macos",
                  "--executable", "/opt/skulk/.venv/bin/skulk")
    home = Path.home()
    assert f"write {home}/Library/LaunchAgents/org.skulk.node.plist (mode 644):" in out
    assert out.splitlines()[-1].startswith("run: launchctl bootstrap gui/")
    # The plist in the dry run is the one that would be written: it parses.
    body = out.split("(mode 644):\n", 1)[1].rsplit("\nrun:", 1)[0]
    agent = plistlib.loads("\n".join(line[4:] for line in body.splitlines()).encode())
    assert agent["ProgramArguments"][:2] == ["/opt/skulk/.venv/bin/skulk", "run"]


def test_an_executable_under_home_is_refused_with_what_to_do(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["service", "install", "--platform", "linux", "--dry-run",
                 "--executable", "/home/ada/skulk/.venv/bin/skulk"]) == 1
    error = capsys.readouterr().err
    assert "ProtectHome" in error and "/opt/skulk" in error


def test_a_reinstall_keeps_the_flags_an_operator_edited(tmp_path: Path) -> None:
    env = tmp_path / "skulk.env"
    fresh = environment_file(ServiceConfig(executable=Path("/opt/skulk/.venv/bin/skulk")))
    run_steps([WriteFile(env, fresh.encode(), 0o640, keep_existing=True)])
    assert env.read_text() == fresh and env.stat().st_mode & 0o777 == 0o640
    env.write_text("SKULK_ARGS=--namespace lab\n")
    run_steps([WriteFile(env, fresh.encode(), 0o640, keep_existing=True)])
    assert env.read_text() == "SKULK_ARGS=--namespace lab\n"
