"""Product code never imports test support: `skulk.testing` is left out of the wheel (see
setup.py and pyproject.toml), so a product module importing it would fail on an installed
Skulk. Every module under src/skulk is read (its import statements, by AST), except tests
(`*_test.py`, `conftest.py`) and `skulk/testing/` itself."""

import ast
from pathlib import Path

import pytest

SOURCE = Path(__file__).resolve().parent  # src/skulk
TEST_SUPPORT = "skulk.testing"


def is_product_module(path: Path) -> bool:
    relative = path.relative_to(SOURCE)
    return not (path.name.endswith("_test.py") or path.name == "conftest.py"
                or relative.parts[0] == "testing")


def module_name(path: Path) -> str:
    """`skulk.a.b` for src/skulk/a/b.py, `skulk.a` for src/skulk/a/__init__.py."""
    parts = ("skulk", *path.relative_to(SOURCE).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(source: str, module: str, is_package: bool) -> set[str]:
    """Every module an import statement in `source` (of `module`) names, relative imports
    resolved: `from a import b` names both `a` and `a.b` (b may be a submodule)."""
    names: set[str] = set()
    package = module if is_package else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base_parts = package.split(".")
                base_parts = base_parts[:len(base_parts) - (node.level - 1)]
                base = ".".join([*base_parts, *([node.module] if node.module else [])])
            else:
                base = node.module or ""
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names)
    return names


def imports_test_support(names: set[str]) -> list[str]:
    return sorted(name for name in names
                  if name == TEST_SUPPORT or name.startswith(f"{TEST_SUPPORT}."))


def product_modules_importing_test_support() -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for path in sorted(SOURCE.rglob("*.py")):
        if not is_product_module(path):
            continue
        names = imported_modules(path.read_text(), module_name(path),
                                 path.name == "__init__.py")
        if hits := imports_test_support(names):
            found[str(path.relative_to(SOURCE.parent))] = hits
    return found


def test_no_product_module_imports_test_support() -> None:
    found = product_modules_importing_test_support()
    assert found == {}, "product modules importing test support:\n" + "\n".join(
        f"  {path}: {', '.join(names)}" for path, names in found.items())


def test_the_scan_reads_the_product_and_skips_tests_and_test_support() -> None:
    product = [path for path in SOURCE.rglob("*.py") if is_product_module(path)]
    assert SOURCE / "node.py" in product
    assert SOURCE / "testing" / "ports.py" not in product
    assert Path(__file__) not in product
    assert not any(path.name == "conftest.py" for path in product)


@pytest.mark.parametrize(("source", "module", "is_package"), [
    ("import skulk.testing.ports", "skulk.node", False),
    ("from skulk.testing.ports import free_port", "skulk.node", False),
    ("from skulk import testing", "skulk.node", False),
    ("from skulk.testing import ports", "skulk.node", False),
    ("from .testing import ports", "skulk.node", False),
    ("from . import testing", "skulk", True),
    ("from ..testing.ports import free_port", "skulk.api.app", False),
    ("def f():\n    import skulk.testing\n", "skulk.node", False),
])
def test_each_way_of_importing_test_support_is_found(source: str, module: str,
                                                     is_package: bool) -> None:
    assert imports_test_support(imported_modules(source, module, is_package))


@pytest.mark.parametrize("source", [
    "import skulk.testingx",
    "from skulk import test_tools",
    "from skulk.shared import testing",
    "import json",
])
def test_other_imports_are_not_test_support(source: str) -> None:
    assert imports_test_support(imported_modules(source, "skulk.node", False)) == []
