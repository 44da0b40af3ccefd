import pytest

from skulk.models.store.hub_files import (
    NoSuchWeights,
    RemoteFile,
    RepoListing,
    choose_files,
    quant_of,
)


def _listing(*names: str) -> RepoListing:
    files = tuple(RemoteFile(name, size_bytes=len(name) * 1000, sha256="0" * 64,
                             git_sha1=None) for name in names)
    return RepoListing(repo="org/model", revision="c" * 40, files=files)


@pytest.mark.parametrize(("name", "quant"), [
    ("qwen2.5-0.5b-instruct-q4_k_m.gguf", "Q4_K_M"),
    ("Llama-3.2-1B-Instruct-Q8_0.gguf", "Q8_0"),
    ("SmolLM2-135M-Instruct.Q4_1.gguf", "Q4_1"),
    ("model-IQ4_XS.gguf", "IQ4_XS"),
    ("phi-4-mini-f16.gguf", "F16"),
    ("Qwen3-8B-BF16-00001-of-00002.gguf", "BF16"),
    ("plain.gguf", None),
])
def test_quant_labels_are_read_from_file_names(name: str, quant: str | None) -> None:
    assert quant_of(name) == quant


def test_without_a_quant_the_usual_balance_is_chosen_and_split_files_stay_together() -> None:
    listing = _listing("README.md", "m-q8_0.gguf", "m-q4_k_m-00001-of-00002.gguf",
                       "m-q4_k_m-00002-of-00002.gguf")
    format, quant, files = choose_files(listing, None, None)
    assert (format, quant) == ("gguf", "Q4_K_M")
    assert sorted(f.name for f in files) == ["m-q4_k_m-00001-of-00002.gguf",
                                             "m-q4_k_m-00002-of-00002.gguf"]


def test_an_unknown_quant_is_refused_naming_what_the_repository_offers() -> None:
    with pytest.raises(NoSuchWeights, match="no Q2_K GGUF; it offers Q4_K_M, Q8_0"):
        choose_files(_listing("m-q8_0.gguf", "m-q4_k_m.gguf"), None, "q2_k")


def test_a_safetensors_repository_fetches_config_and_tokenizer_small_files_first() -> None:
    listing = _listing("config.json", "model-00001-of-00002.safetensors",
                       "model-00002-of-00002.safetensors", "model.safetensors.index.json",
                       "tokenizer.json", "README.md", "onnx/model.onnx")
    format, quant, files = choose_files(listing, None, None)
    assert (format, quant) == ("mlx", None)
    names = [f.name for f in files]
    assert "README.md" not in names and "onnx/model.onnx" not in names
    assert names[0] == "config.json" and names[-1].endswith(".safetensors")


def test_asking_for_a_format_the_repository_lacks_says_what_it_has() -> None:
    with pytest.raises(NoSuchWeights, match="no mlx weights; it offers gguf"):
        choose_files(_listing("m-q8_0.gguf"), "mlx", None)
    with pytest.raises(NoSuchWeights, match="neither .gguf"):
        choose_files(_listing("README.md"), None, None)


def test_a_card_pattern_narrows_a_quant_to_its_files_and_a_wrong_guess_is_harmless() -> None:
    listing = _listing("Model-Q4_K_M.gguf", "other/Model-alt-Q4_K_M.gguf", "Model-Q8_0.gguf")
    _, quant, files = choose_files(listing, "gguf", "Q4_K_M", "model-q4_k_m*.gguf")
    assert quant == "Q4_K_M" and [f.name for f in files] == ["Model-Q4_K_M.gguf"]
    # A card written before the hub was asked may guess the file name wrong: the quant
    # still decides.
    _, _, files = choose_files(listing, "gguf", "Q4_K_M", "guessed-Q4_K_M*.gguf")
    assert sorted(f.name for f in files) == ["Model-Q4_K_M.gguf", "other/Model-alt-Q4_K_M.gguf"]
