"""Engine options as typed values: each engine's options model (`EngineOptions` and its
subclass in the engine's folder) is parsed once, where the node reads its flags and where
the worker adds what the master stamped on an instance, and crosses into the runner as
that model (`EngineConfig.options`); an engine reads it with `of`, never from strings."""

from collections.abc import Mapping
from typing import Annotated, Self

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError
from pydantic_core import ErrorDetails

from skulk.shared.types.instances import Sharding

OptionValues = dict[str, object]
"""Option name -> value (typed, or a flag's string): one layer of a runner's options, before
the layers are merged and parsed into the engine's model."""


class EngineOptionError(ValueError):
    """An engine option has a value the engine cannot take; the message names it."""


def _comma_separated(value: object) -> object:
    if isinstance(value, str):
        return [part for part in value.split(",") if part]
    return value


CommaSeparated = Annotated[list[str], BeforeValidator(_comma_separated)]


class EngineOptions(BaseModel):
    """Options every engine takes from the worker; each engine's model adds its own."""

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)

    batching: bool = True
    """Off: run concurrent requests one at a time (`--no-batching`, whole instances)."""
    sharding: Sharding = "pipeline"
    """How a split instance divides the model (stamped by the master)."""
    ring_hosts: CommaSeparated = Field(default_factory=list)
    """`ip:port` where each rank of a split instance listens, in rank order."""
    weights_sha256: str | None = Field(default=None, pattern="^[0-9a-f]{64}$")
    """The digest of the files this rank loads (the worker's, for split instances): the
    ranks check they agree before they serve."""

    @classmethod
    def parse(cls, raw: Mapping[str, object]) -> Self:
        """The typed options from flag strings or typed values, or an `EngineOptionError`
        naming each bad value."""
        try:
            return cls.model_validate(dict(raw))
        except ValidationError as error:
            known = ", ".join(sorted(cls.model_fields))
            problems = "; ".join(_problem(detail, raw, known) for detail in error.errors())
            raise EngineOptionError(problems) from error

    @classmethod
    def of(cls, options: "EngineOptions") -> Self:
        """These options as this engine's model: as they are when they are, with this
        engine's defaults when only the common options were given (a test's bare
        `EngineConfig`); another engine's options are a TypeError."""
        if isinstance(options, cls):
            return options
        if type(options) is EngineOptions:
            return cls.model_validate(options.model_dump(exclude_unset=True))
        raise TypeError(f"{cls.__name__} expected, but the runner was given "
                        f"{type(options).__name__}")

    def given(self) -> dict[str, object]:
        """The options set explicitly (not left at their defaults), as typed values: what
        a later layer of options is merged over."""
        return self.model_dump(exclude_unset=True)

    def batch_size(self) -> int:
        """Requests a runner with these options decodes at once (the instance's concurrency
        bound); an engine that does not batch runs one at a time."""
        return 1

    def kv_contexts(self) -> int:
        """Whole contexts of KV cells a runner with these options holds: 1 when its
        requests share one context's cells."""
        return 1


def _problem(detail: ErrorDetails, raw: Mapping[str, object], known: str) -> str:
    name = str(detail["loc"][0]) if detail["loc"] else ""
    if detail["type"] == "extra_forbidden":
        return f"unknown engine option {name!r} (this engine takes {known})"
    return f"engine option {name}={raw.get(name)!r}: {detail['msg']}"
