"""The engines placement can choose between (`fitting/engines.py`) for a card, and which
nodes can run each one."""

from skulk.fitting.engines import ENGINE_PREFERENCE, engine_fit
from skulk.shared.types.model_cards import EngineName, ModelCard, ModelSource
from skulk.shared.types.telemetry import NodeTelemetry


def source_for_engine(card: ModelCard, engine: EngineName) -> ModelSource | None:
    """The card's weights in the format `engine` loads, if the card has them."""
    return card.source_for(engine_fit(engine).weight_format)


def engines_of(card: ModelCard) -> list[EngineName]:
    """Engines the card has weights for, in preference order."""
    return [e for e in ENGINE_PREFERENCE if source_for_engine(card, e) is not None]


def runs_engine(node: NodeTelemetry, engine: EngineName) -> bool:
    """A node runs an engine when it advertises a backend tag `<engine>-<compute>`."""
    return any(tag.split("-", 1)[0] == engine for tag in node.backends)
