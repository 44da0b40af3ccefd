"""The catalogue page has a row per built-in card."""

from skulk.models.catalog import builtin_cards_dir, load_cards
from skulk_site.catalogue_ref import catalogue_markdown


def test_every_card_is_listed_with_its_figures() -> None:
    cards = load_cards(builtin_cards_dir())
    page = catalogue_markdown(cards)
    for card in cards:
        assert f"| `{card.model_id}` | {card.family} |" in page
        assert f"| `{card.model_id}` | {card.n_layers} | {card.hidden_size} |" in page
    smollm = next(line for line in page.splitlines() if line.startswith("| `smollm2-135m` |"))
    assert "gguf 98 MB (bundled)" in smollm
