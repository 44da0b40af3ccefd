"""Imports run downward: the product's packages form layers, and a module may import only
from its own package or from a lower layer. `LAYERS` is the one place the order is written
(docs/architecture.md, "Layers", explains it). The import graph is read statically (AST)
from every product module under src/skulk (tests, `conftest.py` and `skulk/testing/`
aside), imports inside functions and `if TYPE_CHECKING:` included: a type-only import
still ties one package's meaning to another's.

A module belongs to the unit its dotted name falls under: a package (`skulk/worker/...`
is `worker`), one named deeper (`shared.types`, apart from the rest of `shared`), a
top-level module (`paths`), or a pattern (`node*`: the node and the modules that wire it).
"""

import ast
import fnmatch
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import pytest

SOURCE = Path(__file__).resolve().parent  # src/skulk

LAYERS: tuple[tuple[str, ...], ...] = (
    # The package itself (its version) and modules that import nothing else of Skulk.
    ("skulk", "client", "service", "paths", "durable_files", "startup_failure"),
    # The wire types every plane carries, and the versions a node reports.
    ("shared.types", "versions"),
    # The replicated State and what reads it; the node's key and id.
    ("shared", "node_identity"),
    # Model families (how each splits, its quirks); the cluster's CA, certificates and
    # signatures.
    ("model_families", "trust"),
    # What fits where; the transport and the signed router; the model store and catalogue.
    ("fitting", "routing", "models"),
    # The master (placement, the log) and the worker (plans, runners, engines).
    ("master", "worker"),
    # Elections, the master seat, membership: the cluster around both.
    ("cluster",),
    # The HTTP API.
    ("api",),
    # The node and the modules that wire its parts together.
    ("node*",),
    # The command line.
    ("cli",),
)
"""Lowest first. Units of one layer do not import each other."""


@dataclass(frozen=True)
class Import:
    """One import statement of a product module that names another unit's module."""

    path: str  # relative to src/
    line: int
    importer: str  # unit
    imported: str  # unit
    module: str  # the module it names

    def where(self) -> str:
        return f"{self.path}:{self.line} imports {self.module}"


def is_product_module(path: Path, source: Path = SOURCE) -> bool:
    relative = path.relative_to(source)
    return not (path.name.endswith("_test.py") or path.name == "conftest.py"
                or relative.parts[0] == "testing")


def module_name(path: Path, source: Path = SOURCE) -> str:
    """`skulk.a.b` for src/skulk/a/b.py, `skulk.a` for src/skulk/a/__init__.py."""
    parts = ("skulk", *path.relative_to(source).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def unit_of(module: str, layers: tuple[tuple[str, ...], ...] = LAYERS) -> str | None:
    """The unit `module` (a `skulk.` name) belongs to, None when no entry of `layers` names
    it. A name (`shared.types`) beats a pattern (`node*`); the longest name wins."""
    if module == "skulk":
        return "skulk"
    inner = module.removeprefix("skulk.")
    entries = [entry for layer in layers for entry in layer]
    named = [entry for entry in entries if not any(c in entry for c in "*?[")
             and (inner == entry or inner.startswith(entry + "."))]
    if named:
        return max(named, key=len)
    top = inner.split(".", 1)[0]
    patterns = [entry for entry in entries if fnmatch.fnmatchcase(top, entry)]
    return patterns[0] if patterns else None


def layer_of(unit: str, layers: tuple[tuple[str, ...], ...] = LAYERS) -> int:
    return next(index for index, layer in enumerate(layers) if unit in layer)


def named_modules(node: ast.Import | ast.ImportFrom, module: str, is_package: bool,
                  known: set[str]) -> list[str]:
    """The Skulk modules one import statement names, relative imports resolved; `from a
    import b` names `a.b` when that is a module, else `a`."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if node.level:
        package = (module if is_package else module.rpartition(".")[0]).split(".")
        base = ".".join([*package[:len(package) - (node.level - 1)],
                         *([node.module] if node.module else [])])
    else:
        base = node.module or ""
    return [f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base
            for alias in node.names]


def product_imports(source: Path = SOURCE,
                    layers: tuple[tuple[str, ...], ...] = LAYERS) -> list[Import]:
    """Every import of one unit's module by another's, in the product under `source`."""
    paths = [path for path in sorted(source.rglob("*.py")) if is_product_module(path, source)]
    known = {module_name(path, source) for path in paths}
    found: list[Import] = []
    for path in paths:
        module = module_name(path, source)
        importer = unit_of(module, layers)
        if importer is None:
            raise AssertionError(f"{path.relative_to(source.parent)}: {module} belongs to no "
                                 "layer; add its package or module to LAYERS (layering_test.py)")
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(node, ast.Import | ast.ImportFrom):
                continue
            for named in named_modules(node, module, path.name == "__init__.py", known):
                if named != "skulk" and not named.startswith("skulk."):
                    continue
                imported = unit_of(named, layers)
                if imported is not None and imported != importer:
                    found.append(Import(str(path.relative_to(source.parent)), node.lineno,
                                        importer, imported, named))
    return found


def upward(imports: Iterable[Import],
           layers: tuple[tuple[str, ...], ...] = LAYERS) -> list[Import]:
    """Imports of a unit in the importer's own layer or above it."""
    return [i for i in imports if layer_of(i.imported, layers) >= layer_of(i.importer, layers)]


def cycles(imports: Iterable[Import]) -> list[list[str]]:
    """Each cycle of the unit graph once, as the units around it (depth-first search)."""
    edges: dict[str, set[str]] = {}
    for i in imports:
        edges.setdefault(i.importer, set()).add(i.imported)
    found: list[list[str]] = []
    seen: set[frozenset[str]] = set()

    def walk(unit: str, path: list[str]) -> None:
        for following in sorted(edges.get(unit, ())):
            if following in path:
                cycle = path[path.index(following):]
                if frozenset(cycle) not in seen:
                    seen.add(frozenset(cycle))
                    found.append([*cycle, following])
            elif len(path) < len(edges) + 1:
                walk(following, [*path, following])

    for start in sorted(edges):
        walk(start, [start])
    return found


def test_every_layer_entry_names_product_code_once() -> None:
    entries = [entry for layer in LAYERS for entry in layer]
    assert len(entries) == len(set(entries))
    units = {unit_of(module_name(path)) for path in SOURCE.rglob("*.py")
             if is_product_module(path)}
    assert set(entries) == units, "LAYERS names units no product module belongs to"


def test_no_package_imports_one_above_it_or_beside_it() -> None:
    against = upward(product_imports())
    assert against == [], "imports against the layers (LAYERS in layering_test.py):\n" + "\n".join(
        f"  {i.where()}: {i.importer} (layer {layer_of(i.importer)}) -> {i.imported} "
        f"(layer {layer_of(i.imported)})" for i in against)


def test_no_cycle_between_packages() -> None:
    imports = product_imports()
    found = cycles(imports)
    assert found == [], "cycles between packages:\n" + "\n".join(
        "  " + " -> ".join(cycle) + "".join(
            f"\n    {i.where()}" for i in imports
            if (i.importer, i.imported) in set(zip(cycle, cycle[1:], strict=False)))
        for cycle in found)


def test_master_and_worker_meet_only_below_both() -> None:
    imports = product_imports()
    assert not [i for i in imports if {i.importer, i.imported} == {"master", "worker"}]
    assert not [i for i in imports if (i.importer, i.imported) == ("trust", "routing")]
    assert any(i.importer == "master" and i.imported == "fitting" for i in imports)
    assert any(i.importer == "worker" and i.imported == "fitting" for i in imports)


def write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / "skulk" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root / "skulk"


SMALL = (("low",), ("mid*",), ("high",))


@pytest.mark.parametrize("statement", [
    "import skulk.high.thing",
    "from skulk.high import thing",
    "from skulk.high.thing import name",
    "from ..high import thing",
    "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from skulk.high.thing import T",
    "def later() -> None:\n    from skulk.high.thing import name",
])
def test_an_upward_import_is_named_with_its_file_and_line(tmp_path: Path,
                                                          statement: str) -> None:
    source = write(tmp_path, {"__init__.py": "", "low/__init__.py": "", "high/__init__.py": "",
                              "high/thing.py": "name = 1\n",
                              "low/user.py": f'"""doc"""\n{statement}\n'})
    against = upward(product_imports(source, SMALL), SMALL)
    assert [(i.path, i.importer, i.imported) for i in against] == [
        ("skulk/low/user.py", "low", "high")]
    assert against[0].line == statement.count("\n") + 2


def test_downward_imports_pass_and_tests_are_not_read(tmp_path: Path) -> None:
    source = write(tmp_path, {"__init__.py": "", "low/__init__.py": "", "high/__init__.py": "",
                              "low/thing.py": "name = 1\n", "mid_a.py": "import skulk.low\n",
                              "mid_b.py": "from skulk import mid_a\n",  # one unit: mid*
                              "high/user.py": "from skulk.low.thing import name\n",
                              "low/user_test.py": "import skulk.high\n",
                              "low/conftest.py": "import skulk.high\n",
                              "testing/helper.py": "import skulk.high\n"})
    imports = product_imports(source, SMALL)
    assert {(i.importer, i.imported) for i in imports} == {("mid*", "low"), ("high", "low")}
    assert upward(imports, SMALL) == []


def test_imports_within_a_layer_and_cycles_are_found(tmp_path: Path) -> None:
    layers = (("a", "b"),)
    source = write(tmp_path, {"__init__.py": "", "a.py": "import skulk.b\n",
                              "b.py": "import skulk.a\n"})
    imports = product_imports(source, layers)
    assert len(upward(imports, layers)) == 2
    assert cycles(imports) == [["a", "b", "a"]]


def test_a_module_outside_every_layer_is_refused(tmp_path: Path) -> None:
    source = write(tmp_path, {"__init__.py": "", "stray.py": ""})
    with pytest.raises(AssertionError, match="stray belongs to no layer"):
        product_imports(source, SMALL)
