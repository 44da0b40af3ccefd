"""Streaming text with stop sequences: never emit what might turn out to be one."""

from dataclasses import dataclass, field


@dataclass
class StopScanner:
    """Feed text pieces; get back what is safe to emit, and whether a stop was hit."""

    stops: list[str]
    _held: str = field(default="", init=False)
    stopped: bool = field(default=False, init=False)
    matched: str | None = field(default=None, init=False)

    def feed(self, piece: str) -> str:
        text = self._held + piece
        hits = [(text.find(s), s) for s in self.stops if s and s in text]
        if hits:
            self.stopped = True
            self._held = ""
            at, self.matched = min(hits)
            return text[:at]
        keep = self._longest_stop_prefix_suffix(text)
        self._held = text[len(text) - keep:] if keep else ""
        return text[: len(text) - keep]

    def flush(self) -> str:
        """What is held back, when generation ends without a stop."""
        held, self._held = self._held, ""
        return held

    def _longest_stop_prefix_suffix(self, text: str) -> int:
        longest = 0
        for stop in self.stops:
            for size in range(min(len(stop) - 1, len(text)), longest, -1):
                if text.endswith(stop[:size]):
                    longest = size
                    break
        return longest
