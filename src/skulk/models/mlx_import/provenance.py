"""The small record an imported model directory keeps about where it came from."""

import hashlib
from pathlib import Path
from typing import Literal

from pydantic import Field

from skulk.shared.types.base import WireModel
from skulk.shared.types.ids import ModelId

PROVENANCE_FILE = "skulk_import.json"


class ImportProvenance(WireModel):
    """Written as `skulk_import.json` beside the weights of every imported model."""

    model_id: ModelId = Field(description="The model this directory holds.")
    source_path: str = Field(description="The GGUF file or directory it was imported from.")
    source_format: Literal["gguf", "hf"] = Field(description="What the source was.")
    source_sha256: str = Field(
        description="SHA-256 of the source file, or of a directory's files in name order.")
    source_bytes: int = Field(description="Size of the source in bytes.")
    q_bits: int | None = Field(
        description="Requested quantization width; None for float32 weights.")
    weight_files: list[str] = Field(description="The safetensors files written.")
    weight_bytes: int = Field(description="Bytes of tensor data written (headers excluded).")
    skulk_version: str = Field(description="The Skulk version that imported it.")
    imported_at: float = Field(description="When, in seconds since the Unix epoch.")


def source_digest(source: Path) -> tuple[str, int]:
    """SHA-256 and byte count of a file, or of every file in a directory by name."""
    files = [source] if source.is_file() else sorted(p for p in source.iterdir() if p.is_file())
    digest = hashlib.sha256()
    total = 0
    for path in files:
        if source.is_dir():
            digest.update(path.name.encode() + b"\0")
        with path.open("rb") as stream:
            while chunk := stream.read(1 << 20):
                digest.update(chunk)
                total += len(chunk)
    return digest.hexdigest(), total
