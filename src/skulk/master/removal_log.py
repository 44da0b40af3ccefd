"""The log line of an instance's removal, whichever path of the master removed it."""

from loguru import logger

from skulk.shared.types.events import Event, InstanceDeleted
from skulk.shared.types.state import State


def log_removal(before: State, event: Event) -> None:
    """Every removal is logged with the reason it carries (`before`: the State it ends)."""
    if isinstance(event, InstanceDeleted) and event.instance_id in before.instances:
        logger.info("instance {} of {} removed: {}", event.instance_id,
                    before.instances[event.instance_id].model_id, event.reason)
