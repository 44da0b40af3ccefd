"""The check a message gets where it comes out of a runner's pipe or queue: a pickle
builds whatever object its bytes describe, so the type a reader claims (`FromRunner`) is
checked, not assumed.

The check is an `isinstance` against the members of the message union: the sender built
each message through its validating constructor, and this is the per-token path (about
0.4 µs a frame here beside ~9 µs to unpickle it, against ~5 µs to validate it again
with a pydantic TypeAdapter).
"""

import typing
from typing import Generic, TypeVar

MessageT = TypeVar("MessageT")


class BadFrame(TypeError):
    """A frame that is not one of the messages its pipe carries; the message names what
    arrived and what was expected."""


def union_members(union: object) -> tuple[type, ...]:
    """The classes of a (possibly `Annotated`) union of message types."""
    if typing.get_origin(union) is typing.Annotated:
        union = typing.get_args(union)[0]
    members = typing.get_args(union) or (union,)
    if not all(isinstance(member, type) for member in members):
        raise TypeError(f"{union!r} is not a union of classes")
    return tuple(member for member in members if isinstance(member, type))


class MessageCheck(Generic[MessageT]):
    """Passes a value that is one of `union`'s members, typed as the union; raises
    `BadFrame` for anything else."""

    def __init__(self, union: object, pipe: str) -> None:
        self.members = union_members(union)
        self._pipe = pipe

    def __call__(self, value: object) -> MessageT:
        if isinstance(value, self.members):
            return typing.cast(MessageT, value)
        raise self.refusal(value)

    def refusal(self, value: object) -> BadFrame:
        """The error for `value`, which is none of the members."""
        expected = ", ".join(member.__name__ for member in self.members)
        return BadFrame(f"the {self._pipe} pipe carried a {type(value).__qualname__} "
                        f"({_shown(value)}); it carries only {expected}")


def _shown(value: object, limit: int = 200) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "…"
