"""State's tasks indexed by the command that started each, derived on first use.

State is replaced whole by `apply`, and a field an event leaves alone keeps its mapping,
so the identity of `State.tasks` tells whether an index built from it still holds: it is
built again only after the tasks changed, and a lookup costs one dict access instead of
a scan of every task (the API asks on every applied event for each request it waits on).
"""

from collections.abc import Mapping

from skulk.shared.types.ids import CommandId, TaskId
from skulk.shared.types.tasks import Task


class TasksByCommand:
    """A cache, not part of State's value: any two compare equal, so States that differ
    only in what they have looked up are still equal."""

    __slots__ = ("_entry",)

    def __init__(self) -> None:
        # One tuple, replaced whole: a reader in another thread never sees the index of
        # one mapping paired with another mapping.
        self._entry: tuple[Mapping[TaskId, Task], dict[CommandId, Task]] | None = None

    def task(self, tasks: Mapping[TaskId, Task], command_id: CommandId) -> Task | None:
        """The task of `tasks` started by `command_id` (the first, should two be)."""
        entry = self._entry
        if entry is None or entry[0] is not tasks:
            by_command: dict[CommandId, Task] = {}
            for task in tasks.values():
                by_command.setdefault(task.command_id, task)
            entry = (tasks, by_command)
            self._entry = entry
        return entry[1].get(command_id)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TasksByCommand)

    __hash__ = None  # type: ignore[assignment]
