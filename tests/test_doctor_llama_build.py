"""`skulk doctor`'s llama.cpp checks against the build installed here: the project's own
install builds llama-cpp-python with ggml RPC and the tree's patches, the secure channel
among them, and the doctor says so."""

import sys
from pathlib import Path

import pytest

REPOSITORY = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPOSITORY))

from bench.llama_patches import installed_patches, tree_patches  # noqa: E402

from skulk.worker.engines.llama_cpp.doctor import llama_cpp_build  # noqa: E402


@pytest.mark.skipif(installed_patches() != tree_patches(),
                    reason="the installed llama.cpp is not built with the tree's "
                           "tools/patches (make install)")
def test_a_build_with_the_trees_patches_reports_rpc_and_its_secure_channel() -> None:
    checks = {check.name: check for check in llama_cpp_build()}
    assert checks["llama.cpp RPC"].level == "OK"
    assert checks["llama.cpp RPC TLS"].level == "OK", checks["llama.cpp RPC TLS"]
    assert "TLS between members" in checks["llama.cpp RPC TLS"].detail


def test_a_build_without_the_channel_is_a_warning_that_names_the_rebuild(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from skulk.worker.engines.llama_cpp import rpc_lib
    from skulk.worker.engines.llama_cpp.doctor import secure_channel

    def lacking() -> int:
        raise rpc_lib.RpcUnavailable("no ggml_backend_rpc_set_channel")

    monkeypatch.setattr(rpc_lib, "channel_setter", lacking)
    check = secure_channel()
    assert check.level == "WARN"
    assert "secure cluster" in check.detail and "llama-cpp-backends.sh" in check.fix
