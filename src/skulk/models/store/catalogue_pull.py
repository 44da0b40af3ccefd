"""What `skulk models pull NAME` fetches: a catalogue card's hub weights when NAME is a
card's id or alias, else NAME as a hub repository. Pure: the card is looked up by the
caller."""

from skulk.models.store.card_hub import hub_file_pattern, hub_source
from skulk.models.store.hub_files import NoSuchWeights
from skulk.models.store.pull import PullRequest
from skulk.shared.types.model_cards import ModelCard, ModelFormat


def default_hub_format(card: ModelCard) -> ModelFormat | None:
    """GGUF when the card has it on the hub (llama.cpp runs anywhere), else MLX."""
    for format in ("gguf", "mlx"):
        if hub_source(card, format) is not None:
            return format
    return None


def pull_request_for(name: str, card: ModelCard | None, *, model_id: str | None = None,
                     format: ModelFormat | None = None, quant: str | None = None
                     ) -> PullRequest:
    """The pull for NAME; a card's weights are stored under the card's id (unless
    `model_id` says otherwise), so the catalogue serves them and corrects the card.
    Raises NoSuchWeights when NAME is a card with no hub weights and no repository."""
    if card is not None:
        chosen = format or default_hub_format(card)
        if chosen == "mlx" and quant is not None:
            _require_listed_mlx_quant(card, quant)
        found = None if chosen is None else hub_source(card, chosen, quant)
        if chosen is not None and found is not None:
            repo, chosen_quant = found
            return PullRequest(repo=repo, model_id=model_id or card.model_id, format=chosen,
                               quant=chosen_quant if chosen == "gguf" else None,
                               pattern=hub_file_pattern(card, chosen, quant))
        if "/" not in name:
            what = f"{format} weights" if format else "weights"
            raise NoSuchWeights(f"the card of {card.model_id} names no hub repository for "
                                f"its {what}; pull a repository instead (owner/name)")
    if "/" not in name:
        raise NoSuchWeights(f"{name!r} is neither a catalogue id (see `skulk models list`) "
                            "nor a hub repository (owner/name)")
    return PullRequest(repo=name, model_id=model_id, format=format, quant=quant)


def _require_listed_mlx_quant(card: ModelCard, quant: str) -> None:
    """An MLX quantization is a repository of its own: only those the card lists are
    known (another is pulled by its repository's name)."""
    listed = [s.quant for s in card.sources if s.format == "mlx" and s.repo and s.quant]
    if quant.lower() not in (q.lower() for q in listed):
        raise NoSuchWeights(f"the card of {card.model_id} lists MLX weights in "
                            f"{', '.join(listed) or 'no quantization'}, not {quant}; pull "
                            "another quantization by its repository's name")
