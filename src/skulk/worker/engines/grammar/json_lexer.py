"""Where a JSON text stands lexically: inside a string or not (escapes followed)."""

from dataclasses import dataclass, replace


@dataclass
class JsonLexer:
    in_string: bool = False
    _escaped: bool = False

    def feed(self, piece: bytes) -> None:
        for byte in piece:
            if self._escaped:
                self._escaped = False
            elif self.in_string and byte == 0x5C:  # backslash
                self._escaped = True
            elif byte == 0x22:  # quote
                self.in_string = not self.in_string

    def copy(self) -> "JsonLexer":
        return replace(self)
