from pathlib import Path

from skulk.versions import Versions, git_commit, version_text, versions


def test_no_commit_outside_a_checkout(tmp_path: Path) -> None:
    assert git_commit(tmp_path) is None


def test_version_text_names_every_part() -> None:
    text = version_text(Versions(skulk="0.1.0", git_commit="abc1234", python="3.11.7",
                                 llama_cpp_python="0.3.36", ggml="0.25.3", mlx=None))
    assert text.splitlines() == ["skulk 0.1.0 (git abc1234)", "Python 3.11.7",
                                 "llama-cpp-python 0.3.36 (ggml 0.25.3)", "MLX not installed"]
    assert versions().skulk == "0.1.0"
