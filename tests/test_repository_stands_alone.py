"""A fresh clone in an empty folder has all it needs: no tracked file names a path of one
particular machine or of something beside the checkout.

Looked for: the roots where one machine keeps people's and projects' files (`/work/...`,
`/home/<user>`, `/root/...`, `/Users/<user>`, `/mnt/...`, `/tmp/shared`), a `shared`
folder next to the repository (`../shared`, `shared/tools`), and `Path(__file__)` climbing
above the repository root. System locations are the same on every machine and are not
looked for: `/usr/lib/x86_64-linux-gnu/openblas-pthread/...`, `/usr/bin/chromium`, `/proc`,
`/sys`, `/dev`, `/etc`, `/var/lib/skulk` and `/opt/skulk` (where a service install puts
Skulk), `/tmp/<scratch>`. bench/results/ is scanned like the rest: a result records
figures, not where its run happened.
"""

import re
import shutil
import subprocess
from pathlib import Path

import pytest

REPOSITORY = Path(__file__).resolve().parents[1]
OUTSIDE = re.compile(
    r"(?<![\w.~/-])/(?:work|home|root|Users|mnt)/[^\s'\"`)]*"
    r"|(?<![\w.~/-])/tmp/shared\b[^\s'\"`)]*"
    r"|\.\./shared\b|\bshared/tools\b|[\"']shared[\"']\s*/\s*[\"']tools[\"']")
PARENTS = re.compile(r"\.parents\[(?P<index>[0-9]+)\]")
ALLOWED = {
    # A made-up user whose service files the service tests write: not a machine's path.
    "/home/ada": "the service tests' example user on Linux",
    "/Users/ada": "the service tests' example user on macOS",
}
# Its samples are the very paths it looks for.
NOT_SCANNED = {"tests/test_repository_stands_alone.py"}


def outside_paths(text: str) -> list[str]:
    """What in `text` names a place outside the repository, allowed ones left out."""
    return [found for found in (m.group(0) for m in OUTSIDE.finditer(text))
            if not any(found == allowed or found.startswith(f"{allowed}/")
                       for allowed in ALLOWED)]


def climbs_out(relative: str, line: str) -> bool:
    """Whether `line` of the file at `relative` goes above the repository root from
    `__file__` (`parents[k]` of a file `k` folders deep is the root; one more is not)."""
    if "__file__" not in line:
        return False
    depth = len(Path(relative).parts) - 1
    return any(int(m["index"]) > depth for m in PARENTS.finditer(line))


def findings(relative: str, text: str) -> list[str]:
    """`file:line: what` for every place in a file that leaves the repository."""
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        for path in outside_paths(line):
            found.append(f"{relative}:{number}: {path}")
        if climbs_out(relative, line):
            found.append(f"{relative}:{number}: climbs above the repository from __file__")
    return found


# What installs, builds and test runs make, for a tree that is not a git checkout.
MADE_HERE = {".git", ".venv", "node_modules", "build", "dashboard_dist", "e2e-artifacts",
             "__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache", "skulk.egg-info",
             "target"}  # cargo's, in rust/


def tracked_files() -> list[str]:
    """The files git tracks; in an unpacked archive, every file but what was made here."""
    if shutil.which("git") is not None and (REPOSITORY / ".git").exists():
        listed = subprocess.run(["git", "ls-files", "-z"], cwd=REPOSITORY,
                                capture_output=True, check=True).stdout
        return [name for name in listed.decode().split("\0") if name]
    return sorted(str(path.relative_to(REPOSITORY)) for path in REPOSITORY.rglob("*")
                  if path.is_file() and not MADE_HERE & set(path.relative_to(REPOSITORY).parts))


def test_no_tracked_file_names_a_path_outside_the_repository() -> None:
    problems = []
    for relative in tracked_files():
        path = REPOSITORY / relative
        if relative in NOT_SCANNED or not path.is_file():
            continue  # not scanned, or deleted in this working tree
        content = path.read_bytes()
        if b"\0" in content[:8192]:
            continue  # binary: images, fonts
        text = content.decode(errors="replace")
        if OUTSIDE.search(text) or "__file__" in text:
            problems += findings(relative, text)
    assert not problems, "paths outside the repository:\n" + "\n".join(problems)


# The samples that name a sibling `shared` folder are written in two pieces, so that this
# file does not itself hold the paths other checks look for.
@pytest.mark.parametrize("line", [
    'TOOL = "/work/' + 'shared/tools/netns-hosts"',
    "see `../" + "shared/tools/netns-hosts`",
    "cache in /home/someone/models",
    "ssh root@box cat /root/.cache/x",
    "mount /mnt/data here",
    "export X=/tmp/" + "shared/tools",
    'TOOL = ROOT.parent / "' + 'shared" / "tools" / "netns-hosts"',
    "Users: /Users/me/skulk",
])
def test_a_machines_paths_are_found(line: str) -> None:
    assert outside_paths(line), line


@pytest.mark.parametrize("line", [
    "OPENBLAS := /usr/lib/x86_64-linux-gnu/openblas-pthread/libblas.so.3",
    "CHROMIUM ?= /usr/bin/chromium",
    'Path("/proc/stat").read_text() and /sys/class/net/eth0 and /dev/null',
    "Environment=SKULK_HOME=/var/lib/skulk, ExecStart=/opt/skulk/bin/skulk, /etc/skulk",
    "SKULK_BENCH_MODELS=/tmp/skulk-bench-models",
    "https://github.com/exo-explore/exo/blob/main/src/work/home/x",
    "the shared/apply.py module, a shared_tools name, src/skulk/shared/types",
    '"--executable", "/home/ada/skulk/.venv/bin/skulk"',
    'home = Path("/Users/ada")',
    "GET /v1/cluster/traces and /healthz",
])
def test_what_every_machine_has_is_allowed(line: str) -> None:
    assert outside_paths(line) == [], line


def test_file_relative_paths_may_reach_the_root_but_not_above() -> None:
    assert not climbs_out("bench/x.py", "ROOT = Path(__file__).resolve().parents[1]")
    assert climbs_out("tests/x.py", 'Path(__file__).resolve().parents[2] / "shared"')
    assert not climbs_out("src/skulk/a/b.py", "Path(__file__).resolve().parents[3]")
    assert climbs_out("src/skulk/a/b.py", "Path(__file__).resolve().parents[4]")
