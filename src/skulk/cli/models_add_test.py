"""`skulk models add` and `skulk models remove` end to end through `main`."""

from pathlib import Path

import pytest

from skulk.cli.main import main
from skulk.models.catalog import ModelCatalog
from skulk.testing.models import bundled_gguf
from skulk.testing.tiny_model import write_tiny_model


def test_add_a_gguf_list_it_and_remove_it(tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "node"
    assert main(["models", "add", str(bundled_gguf()), "--model-id", "smol-added",
                 "--data-dir", str(data)]) == 0
    assert "added smol-added (gguf" in capsys.readouterr().out
    catalog = ModelCatalog.builtin(data / "models")
    card = catalog.resolve("smol-added")
    assert card is not None and catalog.local_path(card, "gguf") is not None

    assert main(["models", "list", "--data-dir", str(data)]) == 0
    assert "smol-added" in capsys.readouterr().out
    assert main(["models", "remove", "smol-added", "--data-dir", str(data)]) == 0
    assert "removed smol-added" in capsys.readouterr().out
    assert ModelCatalog.builtin(data / "models").resolve("smol-added") is None


def test_add_a_generated_safetensors_directory_by_link(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = write_tiny_model(tmp_path / "Tiny-Llama")
    data = tmp_path / "node"
    assert main(["models", "add", str(source), "--link", "--data-dir", str(data)]) == 0
    assert f"symbolic links to {source}" in capsys.readouterr().out
    card = ModelCatalog.builtin(data / "models").resolve("tiny-llama")
    assert card is not None and card.sources[0].format == "mlx"
    assert (card.n_layers, card.hidden_size, card.num_key_value_heads) == (2, 64, 2)


def test_errors_are_one_line_and_exit_one(tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    data = ["--data-dir", str(tmp_path)]
    assert main(["models", "add", str(tmp_path / "nothing.gguf"), *data]) == 1
    assert "skulk: add failed:" in capsys.readouterr().err
    assert main(["models", "remove", "smollm2-135m", *data]) == 1
    assert "built-in model" in capsys.readouterr().err
    assert main(["models", "remove", "never-added", *data]) == 1
    assert "no model 'never-added'" in capsys.readouterr().err
