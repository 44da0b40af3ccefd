import pytest

from skulk.worker.engines.node_options import parse_node_engine_options


def test_options_are_kept_by_engine() -> None:
    options = parse_node_engine_options(
        ["mlx.draft_adaptive=off", "mlx.max_draft=4", "echo.delay=0.5"])
    # Parsed once, here, into each engine's options model; only what was set counts as set.
    assert {name: o.given() for name, o in options.items()} == {
        "mlx": {"draft_adaptive": False, "max_draft": 4}, "echo": {"delay": 0.5}}
    assert type(options["mlx"]).__name__ == "MlxOptions"


@pytest.mark.parametrize(("entry", "says"), [
    ("draft_adaptive=off", "ENGINE.NAME=VALUE"),
    ("mlx.draft_adaptive", "ENGINE.NAME=VALUE"),
    ("vllm.x=1", "unknown engine 'vllm'"),
    ("mlx.no_such_option=1", "unknown engine option 'no_such_option'"),
    ("mlx.max_draft=-3", "max_draft"),
    ("mlx.ring_hosts=1.2.3.4:5", "per instance"),
    ("mlx.batching=off", "--no-batching"),
])
def test_a_bad_option_stops_the_node_with_what_to_fix(entry: str, says: str) -> None:
    with pytest.raises(ValueError, match=says.replace(".", r"\.")):
        parse_node_engine_options([entry])
