"""A node that cannot start: one line for the operator and the exit code that says whose
move it is (a mistyped flag, or something about this machine)."""

from typing import Final, Literal

# 2: the command line asked for something impossible; 1: the machine is not ready for it.
USAGE: Final = 2
ENVIRONMENT: Final = 1
ExitCode = Literal[1, 2]


class StartupFailure(Exception):
    """Raised by whatever finds the problem while a node starts; `skulk run` prints the
    message as one line and exits with `exit_code` (the traceback only with `-v`)."""

    def __init__(self, message: str, exit_code: ExitCode = ENVIRONMENT) -> None:
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code


def startup_failure_in(error: BaseException) -> StartupFailure | None:
    """The first `StartupFailure` inside `error`, which task groups may have wrapped in
    exception groups (and uvicorn in a `SystemExit`'s context)."""
    if isinstance(error, StartupFailure):
        return error
    if isinstance(error, BaseExceptionGroup):
        for inner in error.exceptions:
            if (found := startup_failure_in(inner)) is not None:
                return found
    return None
