"""Which of Skulk's llama.cpp patches (tools/patches) a build carries, by the digest
tools/llama-cpp-backends.sh computes over them and records beside the libraries it
installs."""

import hashlib
from pathlib import Path

PATCHES = Path(__file__).resolve().parents[1] / "tools" / "patches"


def installed_patches() -> str | None:
    """The digest the installed llama-cpp-python build records, or None for a build
    without Skulk's patches (a stock one)."""
    import llama_cpp

    marker = Path(llama_cpp.__file__).parent / "lib" / "skulk-patches"
    return marker.read_text().strip() if marker.exists() else None


def tree_patches() -> str:
    """The digest of this tree's patches, as the script computes it: sha256sum of each
    file in name order, those lines' sha256sum, its first 16 digits."""
    lines = "".join(f"{hashlib.sha256(path.read_bytes()).hexdigest()}  -\n"
                    for path in sorted(PATCHES.glob("*.patch")))
    return hashlib.sha256(lines.encode()).hexdigest()[:16]


def describe(installed: str | None) -> str:
    """One line naming the build: stock, the tree's patches, or other patches."""
    if installed is None:
        return "stock"
    tree = tree_patches()
    return (f"with Skulk patches {installed}"
            + (" (the tree's)" if installed == tree else f" (not the tree's {tree})"))
