"""The CLI page lists every command and flag of the real parser."""

import argparse

from skulk.cli.main import build_parser
from skulk_site.cli_ref import argument_rows, cli_markdown


def test_rows_name_each_flag_with_its_metavar_help_and_default() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=80, help="the port")
    parser.add_argument("--fast", action="store_true", help="go fast")
    parser.add_argument("--mode", choices=("a", "b"), help="which")
    parser.add_argument("path", metavar="PATH", help="a file")
    assert argument_rows(parser) == [["`--port` PORT", "the port", "`80`"],
                                     ["`--fast`", "go fast", ""],
                                     ["`--mode` {a,b}", "which", ""],
                                     ["`PATH`", "a file", ""]]


def test_every_subcommand_and_run_flag_of_skulk_is_on_the_page() -> None:
    parser = build_parser()
    page = cli_markdown(parser)
    for command in ("run", "status", "models", "doctor", "service", "chat"):
        assert f"| `skulk {command}` |" in page
    for nested in ("skulk models pull", "skulk cluster token", "skulk service"):
        assert f" `{nested}`\n" in page
    run = next(action for action in parser._actions
               if isinstance(action, argparse._SubParsersAction)).choices["run"]
    for action in run._actions:
        for flag in action.option_strings:
            if flag not in ("-h", "--help"):
                assert f"`{flag}`" in page
