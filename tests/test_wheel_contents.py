"""The built wheel holds the product and none of its tests: every module of src/skulk
except `*_test.py`, `conftest.py` and the test-support package `skulk.testing`, plus
py.typed, the built dashboard and the native core (skulk._native). Built from a copy of the
tree with the build tools installed here (`pip wheel --no-build-isolation`: nothing is
downloaded), cargo reusing the checkout's rust/target."""

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPOSITORY = Path(__file__).resolve().parents[1]
SOURCE = REPOSITORY / "src" / "skulk"
DASHBOARD = Path("src/skulk/api/dashboard_dist")
BUILD_FILES = ("pyproject.toml", "README.md", "Cargo.toml", "Cargo.lock")


def is_test_file(name: str) -> bool:
    base = name.rsplit("/", 1)[-1]
    return base.endswith("_test.py") or base == "conftest.py"


def product_modules() -> set[str]:
    """`skulk/...py` for every module of the source tree a wheel should ship."""
    names = {f"skulk/{path.relative_to(SOURCE).as_posix()}" for path in SOURCE.rglob("*.py")}
    return {name for name in names
            if not is_test_file(name) and not name.startswith("skulk/testing/")}


def copy_tree(target: Path) -> None:
    """The files a build reads; a stand-in dashboard when `make dashboard` has not run (the
    pytest pass of `make test` comes before the dashboard's build on a fresh clone)."""
    for name in BUILD_FILES:
        shutil.copy2(REPOSITORY / name, target / name)
    shutil.copytree(REPOSITORY / "src", target / "src",
                    ignore=shutil.ignore_patterns("__pycache__", "*.egg-info", "_native*.so"))
    shutil.copytree(REPOSITORY / "rust", target / "rust", ignore=shutil.ignore_patterns("target"))
    dashboard = target / DASHBOARD
    if not (dashboard / "index.html").exists():
        (dashboard / "assets").mkdir(parents=True, exist_ok=True)
        (dashboard / "index.html").write_text("<!doctype html><title>Skulk</title>\n")
        (dashboard / "assets" / "index.js").write_text("console.log('skulk')\n")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tree = tmp_path_factory.mktemp("tree")
    out = tmp_path_factory.mktemp("wheel")
    copy_tree(tree)
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
         "--no-index", "--quiet", "--wheel-dir", str(out), str(tree)],
        capture_output=True, text=True, timeout=300,
        # maturin's build hook runs the maturin beside this Python; cargo builds into the
        # checkout's rust/target, where the install left the same build.
        env={**os.environ, "CARGO_TARGET_DIR": str(REPOSITORY / "rust" / "target"),
             "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"})
    assert built.returncode == 0, built.stdout + built.stderr
    wheels = list(out.glob("skulk-*.whl"))
    assert len(wheels) == 1, wheels
    return wheels[0]


@pytest.fixture(scope="module")
def wheel_names(wheel: Path) -> list[str]:
    with zipfile.ZipFile(wheel) as archive:
        return archive.namelist()


def test_the_wheel_holds_no_test_files_and_no_test_support(wheel_names: list[str]) -> None:
    assert [name for name in wheel_names if is_test_file(name)] == []
    assert [name for name in wheel_names if name.startswith("skulk/testing/")] == []


def test_the_wheel_holds_every_product_module(wheel_names: list[str]) -> None:
    expected = product_modules()
    assert "skulk/node.py" in expected and "skulk/cli/main.py" in expected
    assert sorted(expected - set(wheel_names)) == []


def test_the_wheel_holds_py_typed_the_dashboard_and_the_native_core(
        wheel_names: list[str]) -> None:
    assert "skulk/py.typed" in wheel_names
    assert any(name.startswith("skulk/_native.") and name.endswith((".so", ".pyd"))
               for name in wheel_names)
    assert "skulk/_native.pyi" in wheel_names
    assert "skulk/api/dashboard_dist/index.html" in wheel_names
    assert any(name.startswith("skulk/api/dashboard_dist/assets/") for name in wheel_names)


def test_the_wheel_declares_the_skulk_command(wheel: Path, wheel_names: list[str]) -> None:
    [entry_points] = [name for name in wheel_names
                      if name.endswith(".dist-info/entry_points.txt")]
    with zipfile.ZipFile(wheel) as archive:
        text = archive.read(entry_points).decode()
    assert "skulk=skulk.cli.main:main" in text.replace(" ", "")  # spacing is the builder's
