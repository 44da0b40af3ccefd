"""One finding of `skulk doctor` about this machine: what was looked at, how it stands,
and how to fix it. Each engine's description names its own checks (`machine_checks`)."""

from dataclasses import dataclass
from typing import Literal

Level = Literal["OK", "WARN", "FAIL"]


@dataclass(frozen=True)
class MachineCheck:
    name: str
    level: Level
    detail: str
    fix: str = ""
