"""The crash breaker: too many runner failures in a short window means give up."""

from collections import deque
from dataclasses import dataclass, field


@dataclass
class CrashWindow:
    max_failures: int = 3
    window_seconds: float = 60.0
    _failures: deque[float] = field(default_factory=deque)

    def record(self, now: float) -> bool:
        """Record a failure at `now`; True when the breaker trips."""
        self._failures.append(now)
        while self._failures and now - self._failures[0] > self.window_seconds:
            self._failures.popleft()
        return len(self._failures) >= self.max_failures
