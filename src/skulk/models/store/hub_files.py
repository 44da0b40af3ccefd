"""Which files of a hub repository make one model in one format: pure, from a listing."""

import re
from dataclasses import dataclass
from fnmatch import fnmatch

from skulk.shared.types.model_cards import ModelFormat


@dataclass(frozen=True)
class RemoteFile:
    """A file as the hub lists it: LFS files carry their sha256, others a git blob id."""

    name: str
    size_bytes: int
    sha256: str | None
    git_sha1: str | None


@dataclass(frozen=True)
class RepoListing:
    """A repository at one commit."""

    repo: str
    revision: str
    files: tuple[RemoteFile, ...]


class NoSuchWeights(ValueError):
    """The repository has no weights matching what was asked; the message lists what it has."""


# Quantization labels as GGUF file names carry them: Q4_K_M, Q8_0, IQ4_XS, F16, BF16...
_QUANT = re.compile(r"(?<![A-Za-z0-9])(I?Q\d(?:_[A-Z0-9]+)*|[BF]F?16|F32)(?![A-Za-z0-9])",
                    re.IGNORECASE)
# Without --quant, the first of these a GGUF repository offers: the usual balance of size
# and quality first, then larger and smaller.
QUANT_PREFERENCE = ("Q4_K_M", "Q4_K_S", "Q5_K_M", "Q4_0", "Q4_1", "Q8_0", "Q6_K", "Q3_K_M",
                    "F16", "BF16", "F32")
# Besides the weights, a safetensors model needs its config and tokenizer.
_COMPANIONS = ("config.json", "generation_config.json", "tokenizer.json",
               "tokenizer_config.json", "tokenizer.model", "special_tokens_map.json",
               "chat_template.jinja", "chat_template.json", "vocab.json", "merges.txt",
               "model.safetensors.index.json")


def quant_of(filename: str) -> str | None:
    """The quantization label in a GGUF file name, upper-cased, or None."""
    found = _QUANT.findall(filename.rsplit("/", 1)[-1])
    return found[-1].upper() if found else None


def formats_in(listing: RepoListing) -> list[ModelFormat]:
    """The formats a repository offers: GGUF files, or a config with safetensors."""
    names = [f.name for f in listing.files]
    offered: list[ModelFormat] = []
    if any(n.endswith(".gguf") for n in names):
        offered.append("gguf")
    if "config.json" in names and any(n.endswith(".safetensors") for n in names):
        offered.append("mlx")
    return offered


def choose_files(listing: RepoListing, format: ModelFormat | None, quant: str | None,
                 pattern: str | None = None
                 ) -> tuple[ModelFormat, str | None, list[RemoteFile]]:
    """The format, quantization and files to fetch, small files first (config and
    sizes before any weight). A GGUF `pattern` (a catalogue card's `*Q4_K_M*.gguf`)
    narrows the quantization's files when some match it; the quantization decides, since
    a card's file names are written before the hub is asked. Raises NoSuchWeights naming
    what the repository offers."""
    offered = formats_in(listing)
    if not offered:
        raise NoSuchWeights(f"{listing.repo} has neither .gguf files nor config.json with "
                            ".safetensors; it has: {_names(listing)}")
    if format is not None and format not in offered:
        raise NoSuchWeights(f"{listing.repo} has no {format} weights; it offers "
                            f"{', '.join(offered)}")
    chosen = format or offered[0]
    if chosen == "gguf":
        quant, files = _gguf_files(listing, quant)
        files = matching(files, pattern) or files
    else:
        quant, files = None, [f for f in listing.files if _is_safetensors_part(f.name)]
    return chosen, quant, sorted(files, key=lambda f: (f.size_bytes, f.name))


def _gguf_files(listing: RepoListing, quant: str | None) -> tuple[str, list[RemoteFile]]:
    ggufs = [f for f in listing.files if f.name.endswith(".gguf")]
    by_quant: dict[str, list[RemoteFile]] = {}
    for file in ggufs:
        by_quant.setdefault(quant_of(file.name) or file.name, []).append(file)
    if quant is not None:
        wanted = quant.upper()
        if wanted not in by_quant:
            raise NoSuchWeights(f"{listing.repo} has no {wanted} GGUF; it offers "
                                f"{', '.join(sorted(by_quant))} (--quant)")
        return wanted, by_quant[wanted]
    if len(by_quant) == 1:
        only = next(iter(by_quant))
        return only, by_quant[only]
    for preferred in QUANT_PREFERENCE:
        if preferred in by_quant:
            return preferred, by_quant[preferred]
    raise NoSuchWeights(f"{listing.repo} offers several GGUF files; choose one with --quant: "
                        f"{', '.join(sorted(by_quant))}")


def matching(files: list[RemoteFile], pattern: str | None) -> list[RemoteFile]:
    """The files whose base name matches `pattern`, case-insensitively (none: [])."""
    if pattern is None:
        return []
    wanted = pattern.lower()
    return [f for f in files if fnmatch(f.name.rsplit("/", 1)[-1].lower(), wanted)]


def _is_safetensors_part(name: str) -> bool:
    base = name.rsplit("/", 1)[-1]
    return "/" not in name and (base in _COMPANIONS or fnmatch(base, "*.safetensors"))


def _names(listing: RepoListing) -> str:
    names = [f.name for f in listing.files][:12]
    return ", ".join(names) + (" ..." if len(listing.files) > 12 else "") or "no files"
