"""Drafters by name: which ones an engine can offer, built from its options (`MlxOptions`:
`drafter`, `max_draft`, `draft_model_path` enabling `draft_model`, and `drafter_key` with
`cluster_connect` enabling `remote`, see remote.py)."""

from collections.abc import Callable

from loguru import logger

from skulk.worker.engines.mlx.drafters.ngram import NGramDrafter
from skulk.worker.engines.mlx.drafters.protocol import Drafter, DrafterName
from skulk.worker.engines.mlx.options import MlxOptions


def default_drafter(options: MlxOptions) -> DrafterName | None:
    """The drafter of requests that make no choice; None: they decode plainly."""
    return None if options.drafter == "none" else options.drafter


def _draft_model(options: MlxOptions) -> Drafter | None:
    if options.draft_model_path is None:
        return None
    from skulk.worker.engines.mlx.drafters.draft_model import load_draft_model_drafter
    return load_draft_model_drafter(options.draft_model_path)


def _remote(options: MlxOptions) -> Drafter | None:
    if not options.drafter_key:
        return None
    from skulk.worker.engines.mlx.drafters.remote import remote_drafter_from_options
    return remote_drafter_from_options(options)


# Each drafter kind; a builder returns None when the options do not enable it.
_BUILDERS: dict[DrafterName, Callable[[MlxOptions], Drafter | None]] = {
    "ngram": lambda _options: NGramDrafter(),
    "draft_model": _draft_model,
    "remote": _remote,
}


def build_drafters(options: MlxOptions) -> dict[str, Drafter]:
    """Every drafter these options make available. One that fails to build is left out
    (requests asking for it decode plainly, which gives the same output) and logged."""
    drafters: dict[str, Drafter] = {}
    for name, build in _BUILDERS.items():
        try:
            drafter = build(options)
        except (OSError, ValueError, RuntimeError) as error:
            logger.error("drafter {} is unavailable: {}", name, error)
            continue
        if drafter is not None:
            drafters[name] = drafter
    return drafters
