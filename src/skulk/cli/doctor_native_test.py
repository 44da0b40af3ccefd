from pathlib import Path

from skulk.cli.doctor_native import native_core


def test_the_native_core_imports_and_a_missing_rust_toolchain_warns(tmp_path: Path) -> None:
    core, rust = native_core()  # this checkout was built with the cargo on PATH
    assert core.level == "OK"
    assert rust.level == "OK" and rust.detail.startswith("cargo ")
    _core, missing = native_core(search_path=str(tmp_path))
    assert missing.level == "WARN" and "rustup" in missing.fix
