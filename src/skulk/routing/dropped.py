"""Counting the messages a node refused: by topic and by reason, for `/metrics`."""

from collections import Counter

from loguru import logger

# Every refusal is counted; only the first of each kind, then every 1000th, is logged,
# so a flood of junk cannot flood the log too.
_LOG_EVERY = 1000


class DroppedMessages:
    def __init__(self) -> None:
        self.counts: Counter[tuple[str, str]] = Counter()

    def count(self, topic: str, reason: str, size: int) -> None:
        self.counts[topic, reason] += 1
        seen = self.counts[topic, reason]
        if seen == 1 or seen % _LOG_EVERY == 0:
            logger.warning("dropped a {} message ({} bytes): {} ({} so far)", topic, size,
                           reason, seen)

    def total(self) -> int:
        return sum(self.counts.values())
