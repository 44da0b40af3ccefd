"""Files that must survive a crash whole or not at all (keys, certificates, tokens)."""

import os
from pathlib import Path


def write_file_atomically(path: Path, data: bytes, mode: int = 0o644) -> None:
    """Write `data` to `path` so that a crash leaves either the old file or the new one:
    write a temporary file, fsync it, rename it over `path`, fsync the directory."""
    temporary = path.with_name(path.name + ".tmp")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(descriptor, "wb") as file:
        file.write(data)
        file.flush()
        os.fsync(file.fileno())
    temporary.replace(path)
    directory = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)
