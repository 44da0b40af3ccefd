"""The CLI reference page, written from `skulk`'s own argument parser."""

import argparse

from skulk_site.markdown import table


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    return {name: sub for action in parser._actions
            if isinstance(action, argparse._SubParsersAction)
            for name, sub in action.choices.items()}


def _helps(parser: argparse.ArgumentParser) -> dict[str, str]:
    """Each subcommand's one-line help, as the parent lists it."""
    return {choice.dest: choice.help or "" for action in parser._actions
            if isinstance(action, argparse._SubParsersAction)
            for choice in action._choices_actions}


def _flag(action: argparse.Action) -> str:
    positional = action.metavar if isinstance(action.metavar, str) else action.dest
    names = ", ".join(f"`{name}`" for name in action.option_strings) or f"`{positional}`"
    if action.nargs == 0:
        return names
    metavar = action.metavar or (action.dest.upper() if action.option_strings else None)
    if action.choices is not None:
        metavar = "{" + ",".join(str(choice) for choice in action.choices) + "}"
    return f"{names} {metavar}" if metavar and action.option_strings else names


def _default(action: argparse.Action) -> str:
    if action.nargs == 0 or action.default in (None, argparse.SUPPRESS, [], False):
        return ""
    return f"`{action.default}`"


def argument_rows(parser: argparse.ArgumentParser) -> list[list[str]]:
    """One row per argument the parser takes (help and subcommands left out)."""
    rows = []
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction | argparse._SubParsersAction):
            continue
        help_text = "" if action.help == argparse.SUPPRESS else (action.help or "")
        if action.help == argparse.SUPPRESS and not action.option_strings:
            continue
        if "%(default)" in help_text:
            help_text = help_text.replace("%(default)s", str(action.default))
        if action.choices is not None and not action.option_strings:
            help_text = f"one of {', '.join(map(str, action.choices))}. {help_text}".strip()
        rows.append([_flag(action), help_text, _default(action)])
    return rows


def _command_sections(parser: argparse.ArgumentParser, path: list[str],
                      help_text: str) -> list[str]:
    lines = [f"{'#' * min(len(path) + 1, 4)} `{' '.join(path)}`", ""]
    if help_text:
        lines += [help_text[0].upper() + help_text[1:] + ".", ""]
    lines += ["```", parser.format_usage().strip().removeprefix("usage: "), "```", ""]
    lines += table(["argument", "what", "default"], argument_rows(parser))
    helps = _helps(parser)
    for name, sub in _subparsers(parser).items():
        lines += ["", *_command_sections(sub, [*path, name], helps.get(name, ""))]
    return lines


def cli_markdown(parser: argparse.ArgumentParser) -> str:
    """The reference page: every command and subcommand, its usage and its arguments."""
    helps = _helps(parser)
    lines = ["# Command line", "",
             "Generated from `skulk`'s argument parser when this site was built, so it lists "
             "exactly what the code accepts. `skulk COMMAND --help` prints the same. Bare "
             "`skulk [flags]` is `skulk run [flags]`.", "", "## Commands", ""]
    lines += table(["command", "what it does"], [
        [f"`skulk {name}`", helps.get(name, "")] for name in _subparsers(parser)])
    lines += ["", "## `skulk`", "", "```",
              parser.format_usage().strip().removeprefix("usage: "), "```", ""]
    lines += table(["argument", "what", "default"], argument_rows(parser))
    for name, sub in _subparsers(parser).items():
        lines += ["", *_command_sections(sub, ["skulk", name], helps.get(name, ""))]
    return "\n".join(lines) + "\n"
