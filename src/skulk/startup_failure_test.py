from skulk.startup_failure import USAGE, StartupFailure, startup_failure_in


def test_a_failure_is_found_inside_nested_exception_groups() -> None:
    failure = StartupFailure("the API port 1 is already in use", USAGE)
    wrapped = BaseExceptionGroup("outer", [ValueError("x"), BaseExceptionGroup(
        "inner", [failure])])
    assert startup_failure_in(wrapped) is failure
    assert startup_failure_in(ValueError("x")) is None
