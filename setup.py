"""The one thing pyproject.toml cannot say to setuptools: leave the tests out of the wheel.

Tests live beside the code they test (`*_test.py`, `conftest.py`); setuptools copies every
`.py` file of a package into the wheel, and `exclude-package-data` filters data files only.
`skulk.testing` (test support) is left out in pyproject.toml's `packages.find`.
src/skulk/wheel_contents_test.py builds the wheel and checks what it holds. (Under maturin
the same rule is `[tool.maturin] exclude`.)
"""

from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py


def is_test_file(path: str) -> bool:
    name = Path(path).name
    return name.endswith("_test.py") or name == "conftest.py"


class BuildPyWithoutTests(build_py):
    def find_package_modules(self, package: str, package_dir: str) -> list[tuple[str, str, str]]:
        modules: list[tuple[str, str, str]] = super().find_package_modules(package, package_dir)
        return [module for module in modules if not is_test_file(module[2])]


setup(cmdclass={"build_py": BuildPyWithoutTests})
