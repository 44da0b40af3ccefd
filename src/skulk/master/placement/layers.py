"""How a model's layers and heads divide over the nodes of one instance."""

from collections.abc import Sequence

from skulk.shared.types.model_cards import ModelCard


def proportional_layer_counts(n_layers: int, weights: Sequence[int]) -> list[int]:
    """Split `n_layers` in proportion to `weights` by largest remainder, at least one each.

    Integer arithmetic only, so every master computes the same split. Ties in the remainder
    go to the earlier rank.
    """
    if not 0 < len(weights) <= n_layers:
        raise ValueError(f"cannot split {n_layers} layers over {len(weights)} shards")
    if sum(weights) <= 0 or any(w < 0 for w in weights):
        weights = [1] * len(weights)
    total = sum(weights)
    counts = [n_layers * w // total for w in weights]
    remainders = [n_layers * w % total for w in weights]
    by_remainder = sorted(range(len(weights)), key=lambda i: (-remainders[i], i))
    for i in by_remainder[: n_layers - sum(counts)]:
        counts[i] += 1
    # A shard with no layer would be a rank with nothing to do; take one from the largest.
    for i in range(len(counts)):
        if counts[i] == 0:
            donor = max(range(len(counts)), key=lambda j: (counts[j], -j))
            counts[donor] -= 1
            counts[i] = 1
    return counts


def layer_ranges(counts: Sequence[int]) -> list[tuple[int, int]]:
    """Contiguous [start, end) ranges in rank order."""
    ranges = []
    start = 0
    for count in counts:
        ranges.append((start, start + count))
        start += count
    return ranges


def tensor_split_problem(card: ModelCard, width: int) -> str | None:
    """Why the card's heads cannot be split `width` ways, or None when they can."""
    parts = []
    if card.num_attention_heads % width:
        parts.append(f"{card.num_attention_heads} query heads")
    if card.num_key_value_heads % width:
        parts.append(f"{card.num_key_value_heads} KV heads")
    if not parts:
        return None
    return f"{' and '.join(parts)} do not divide by {width}"


def pipeline_split_problem(card: ModelCard, width: int) -> str | None:
    """Why the card's layers cannot be split `width` ways, or None when they can."""
    if width > card.n_layers:
        return f"{card.n_layers} layers cannot give each of {width} nodes a layer"
    return None
