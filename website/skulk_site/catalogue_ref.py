"""The model catalogue page, written from the built-in model cards."""

from skulk.shared.types.model_cards import ModelCard
from skulk_site.markdown import table


def _size(size_bytes: int) -> str:
    return f"{size_bytes / 1e9:.2f} GB" if size_bytes >= 1e9 else f"{size_bytes / 1e6:.0f} MB"


def _parameters(card: ModelCard) -> str:
    if card.parameters is None:
        return ""
    billions = card.parameters / 1e9
    return f"{billions:.1f} B" if billions >= 1 else f"{card.parameters / 1e6:.0f} M"


def _sources(card: ModelCard) -> str:
    approximate = "~" if "sources.size_bytes" in card.unverified else ""
    return "<br>".join(
        f"{source.format}{' ' + source.quant if source.quant else ''} "
        f"{approximate}{_size(source.size_bytes)}"
        + (" (bundled)" if source.package else "") for source in card.sources)


def catalogue_markdown(cards: list[ModelCard]) -> str:
    """The catalogue page: one row per card, then each card's architecture figures."""
    cards = sorted(cards, key=lambda card: card.model_id)
    lines = ["# Model catalogue", "",
             f"The {len(cards)} built-in model cards "
             "(`src/skulk/models/builtin_cards/*.toml`), read when this site was built. "
             "`skulk models pull ID` fetches one; a `~` marks a "
             "size the card guesses, which the hub corrects at the first pull. Models added "
             "with `skulk models add` or pulled by repository join the catalogue of the "
             "cluster that holds them. Placement uses the layer count, widths and head "
             "counts below to say how many nodes a model needs.", ""]
    lines += table(["model", "family", "parameters", "context", "weights", "capabilities",
                    "drafters"], [
        [f"`{card.model_id}`", card.family, _parameters(card), f"{card.context_length:,}",
         _sources(card), ", ".join(card.capabilities), ", ".join(card.drafters)]
        for card in cards])
    lines += ["", "## Architecture", "",
              "What placement and the engines read from each card: layers (the unit of a "
              "pipeline split), the residual width, query and key/value heads (a tensor "
              "split needs the heads to divide by the number of nodes).", ""]
    lines += table(["model", "layers", "hidden size", "attention heads", "KV heads",
                    "head width", "aliases"], [
        [f"`{card.model_id}`", card.n_layers, card.hidden_size, card.num_attention_heads,
         card.num_key_value_heads, card.attention_head_dim,
         ", ".join(f"`{alias}`" for alias in card.aliases)] for card in cards])
    return "\n".join(lines) + "\n"
