"""Every number every `skulk` command takes is checked while parsing: one line, exit 2."""

import argparse
from collections.abc import Callable, Iterator

import pytest

from skulk.cli import argument_types as types
from skulk.cli.main import build_parser, main, subcommands

# A value each type refuses, and one it takes.
REFUSED_AND_TAKEN: dict[str, tuple[str, str]] = {
    "whole_number": ("-1", "0"),
    "positive_int": ("0", "3"),
    "port": ("99999", "8080"),
    "port_or_any": ("-3", "0"),
    "positive_number": ("0", "0.5"),
    "non_negative_number": ("-0.1", "0"),
    "finite_number": ("nan", "-1"),
}


def test_each_type_says_what_is_wrong_in_its_message() -> None:
    with pytest.raises(argparse.ArgumentTypeError, match="'x' is not a whole number"):
        types.whole_number("x")
    with pytest.raises(argparse.ArgumentTypeError, match="-1 is negative; give 0 or more"):
        types.whole_number("-1")
    with pytest.raises(argparse.ArgumentTypeError, match="give 1 to 65535"):
        types.port("0")
    with pytest.raises(argparse.ArgumentTypeError, match="'inf' is not a finite number"):
        types.positive_number("inf")
    with pytest.raises(argparse.ArgumentTypeError, match="2.5 is above 2"):
        types.at_most(2.0, types.non_negative_number)("2.5")
    assert types.port("1") == 1 and types.port("65535") == 65535
    assert types.at_most(2.0, types.non_negative_number)("2") == 2.0


def numeric_flags() -> Iterator[tuple[str, str, Callable[[str], object]]]:
    """(command, flag, type) of every option of every command that parses a number."""
    parser = build_parser()
    commands = dict(subcommands(parser))
    commands.update({f"models {name}": sub
                     for name, sub in subcommands(commands.pop("models")).items()})
    for name, command in commands.items():
        for action in command._actions:
            kind = action.type
            if callable(kind) and getattr(kind, "__name__", "") not in ("str", "Path") \
                    and not action.choices and action.option_strings:
                yield name, action.option_strings[-1], kind


def test_no_flag_parses_a_number_with_a_bare_int_or_float() -> None:
    flags = list(numeric_flags())
    assert len(flags) >= 15
    loose = [(c, f) for c, f, kind in flags if kind in (int, float)]
    assert loose == [], "use a type from argument_types: it refuses what cannot work"
    assert {kind.__name__ for _, _, kind in flags} <= set(REFUSED_AND_TAKEN)


@pytest.mark.parametrize(("command", "flag", "kind"), list(numeric_flags()))
def test_every_numeric_flag_refuses_a_bad_value_in_one_line(
        command: str, flag: str, kind: Callable[[str], object],
        capsys: pytest.CaptureFixture[str]) -> None:
    refused, taken = REFUSED_AND_TAKEN[getattr(kind, "__name__", "")]
    kind(taken)
    with pytest.raises(SystemExit) as exited:
        main([*command.split(), flag, refused])
    assert exited.value.code == 2
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"skulk {command}: argument "), lines
    assert flag in lines[0] and "Traceback" not in lines[0]


def test_the_reported_mistakes_are_refused_before_a_node_starts(
        capsys: pytest.CaptureFixture[str]) -> None:
    for args in (["run", "--api-port", "99999"], ["run", "--threads", "0"],
                 ["run", "--threads", "-3"], ["--api-port", "99999"]):
        with pytest.raises(SystemExit) as exited:
            main(args)
        assert exited.value.code == 2
    assert capsys.readouterr().err.splitlines() == [
        "skulk run: argument --api-port: 99999 is not a port; give 1 to 65535 "
        "(`skulk run --help` lists what it takes)",
        "skulk run: argument --threads: 0 is too small; give 1 or more "
        "(`skulk run --help` lists what it takes)",
        "skulk run: argument --threads: -3 is too small; give 1 or more "
        "(`skulk run --help` lists what it takes)",
        "skulk run: argument --api-port: 99999 is not a port; give 1 to 65535 "
        "(`skulk run --help` lists what it takes)"]
