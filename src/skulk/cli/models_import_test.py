from pathlib import Path

from skulk.cli.main import build_parser
from skulk.cli.models_import import identify
from skulk.models.catalog import ModelCatalog


def test_identify_by_gguf_name_alias_flag_or_path(tmp_path: Path) -> None:
    catalog = ModelCatalog.builtin(tmp_path)
    bundled = Path("/anywhere/SmolLM2-135M-Instruct.Q4_1.gguf")
    card, model_id = identify(catalog, bundled, None)
    assert card is not None and model_id == "smollm2-135m"
    card, model_id = identify(catalog, Path("/models/SmolLM2-135M-Instruct"), None)
    assert card is not None and model_id == "smollm2-135m"
    card, model_id = identify(catalog, Path("/x/w.gguf"), "HuggingFaceTB/SmolLM2-135M-Instruct")
    assert card is not None and model_id == "smollm2-135m"
    assert identify(catalog, Path("/x/My-Model.gguf"), None) == (None, "my-model")
    assert identify(catalog, Path("/x/a.gguf"), "custom") == (None, "custom")


def test_models_subcommands_parse() -> None:
    parser = build_parser()
    args = parser.parse_args(["models", "import", "m.gguf", "--q-bits", "4",
                              "--data-dir", "/d"])
    assert (args.action, args.path, args.q_bits, args.data_dir) == (
        "import", Path("m.gguf"), 4, Path("/d"))
    assert parser.parse_args(["models", "list", "--data-dir", "/d"]).data_dir == Path("/d")
    assert parser.parse_args(["models", "--data-dir", "/e"]).data_dir == Path("/e")
    assert parser.parse_args(["models"]).action is None
