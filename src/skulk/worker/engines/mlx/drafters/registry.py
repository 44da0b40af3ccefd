"""Drafters by name: which ones an engine can offer, built from its options.

Options (strings, as in `EngineConfig.options`): `drafter` is the default drafter of
requests that do not choose (`ngram`, `draft_model`, `remote` or `none`; `ngram` when
unset); `max_draft` the default tokens per round (16); `draft_model_path` an MLX model
directory sharing the target's tokenizer (enables `draft_model`); `drafter_key` (where
the drafting node answers) and `cluster_connect` (this node's transport endpoints) enable
`remote`, see remote.py.
"""

from collections.abc import Callable, Mapping
from pathlib import Path

from loguru import logger

from skulk.worker.engines.mlx.drafters.ngram import NGramDrafter
from skulk.worker.engines.mlx.drafters.protocol import DRAFTER_NAMES, Drafter

DEFAULT_DRAFTER = "ngram"


class DrafterOptionError(ValueError):
    """An engine option about drafting is malformed."""


def default_drafter(options: Mapping[str, str]) -> str | None:
    """The drafter of requests that make no choice; None: they decode plainly."""
    name = options.get("drafter", DEFAULT_DRAFTER)
    if name == "none":
        return None
    if name not in DRAFTER_NAMES:
        raise DrafterOptionError(f"engine option drafter={name!r}: use one of "
                                 f"{', '.join(DRAFTER_NAMES)} or none")
    return name


def _draft_model(options: Mapping[str, str]) -> Drafter:
    from skulk.worker.engines.mlx.drafters.draft_model import load_draft_model_drafter
    return load_draft_model_drafter(Path(options["draft_model_path"]))


def _remote(options: Mapping[str, str]) -> Drafter:
    from skulk.worker.engines.mlx.drafters.remote import remote_drafter_from_options
    return remote_drafter_from_options(options)


# Each drafter kind, and the option that must be present for it to exist.
_BUILDERS: dict[str, tuple[str | None, Callable[[Mapping[str, str]], Drafter]]] = {
    "ngram": (None, lambda _options: NGramDrafter()),
    "draft_model": ("draft_model_path", _draft_model),
    "remote": ("drafter_key", _remote),
}


def build_drafters(options: Mapping[str, str]) -> dict[str, Drafter]:
    """Every drafter these options make available. One that fails to build is left out
    (requests asking for it decode plainly, which gives the same output) and logged."""
    drafters: dict[str, Drafter] = {}
    for name, (needs, build) in _BUILDERS.items():
        if needs is not None and not options.get(needs):
            continue
        try:
            drafters[name] = build(options)
        except (OSError, ValueError, RuntimeError) as error:
            logger.error("drafter {} is unavailable: {}", name, error)
    return drafters
