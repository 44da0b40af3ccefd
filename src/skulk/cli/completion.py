"""`skulk completion bash|zsh|fish`: shell completion scripts generated from the argument
parser itself, so a new flag or command completes without anyone editing a script."""

import argparse
import shlex
from dataclasses import dataclass, field

SHELLS = ("bash", "zsh", "fish")


@dataclass(frozen=True)
class CommandSpec:
    """One command level: its words so far (`models list`), options and subcommands."""

    path: tuple[str, ...]
    options: list[tuple[str, str]] = field(default_factory=list)  # (option, help)
    subcommands: list[tuple[str, str]] = field(default_factory=list)  # (name, help)
    values: list[str] = field(default_factory=list)  # a positional's choices


def command_specs(parser: argparse.ArgumentParser,
                  path: tuple[str, ...] = ()) -> list[CommandSpec]:
    """Every command level of `parser`, depth first."""
    spec = CommandSpec(path)
    nested: list[CommandSpec] = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help or "" for choice in action._choices_actions}
            for name, sub in action.choices.items():
                spec.subcommands.append((name, helps.get(name, "")))
                nested += command_specs(sub, (*path, name))
        elif not action.option_strings and action.choices is not None:
            spec.values.extend(str(choice) for choice in action.choices)
        else:
            spec.options.extend((option, action.help or "") for option in action.option_strings
                                if option.startswith("--"))
    return [spec, *nested]


def _words(spec: CommandSpec, extra: list[str]) -> str:
    return " ".join([name for name, _ in spec.subcommands] + spec.values
                    + [o for o, _ in spec.options] + extra)


def bash_script(specs: list[CommandSpec]) -> str:
    """A `_skulk` function: it finds the command level from the words typed so far, then
    offers that level's subcommands and options. Bare `skulk` takes `run`'s flags."""
    by_path = {spec.path: spec for spec in specs}
    run_flags = [o for o, _ in by_path[("run",)].options] if ("run",) in by_path else []
    steps = " ".join(f'"{" ".join(spec.path[:-1])}|{spec.path[-1]}"'
                     for spec in specs if spec.path)
    cases = "\n".join(
        f'        {shlex.quote(" ".join(spec.path))}) words={shlex.quote(_words(spec, run_flags if not spec.path else []))} ;;'  # noqa: E501
        for spec in specs)
    return f"""# skulk completion for bash: source <(skulk completion bash)
_skulk() {{
    local cur="${{COMP_WORDS[COMP_CWORD]}}" path="" word i words step
    local steps=({steps})
    for ((i = 1; i < COMP_CWORD; i++)); do
        word="${{COMP_WORDS[i]}}"
        for step in "${{steps[@]}}"; do
            if [[ "$step" == "$path|$word" ]]; then
                path="${{path:+$path }}$word"
                break
            fi
        done
    done
    case "$path" in
{cases}
        *) words="" ;;
    esac
    COMPREPLY=($(compgen -W "$words" -- "$cur"))
}}
complete -o default -F _skulk skulk
"""


def zsh_script(specs: list[CommandSpec]) -> str:
    """zsh runs the bash function through its bash completion layer."""
    return ("# skulk completion for zsh: source <(skulk completion zsh)\n"
            "autoload -U +X compinit && compinit\n"
            "autoload -U +X bashcompinit && bashcompinit\n"
            + bash_script(specs).split("\n", 1)[1])


def fish_script(specs: list[CommandSpec]) -> str:
    """One `complete` line per subcommand and option, guarded by the command level."""
    lines = ["# skulk completion for fish: skulk completion fish | source",
             "complete -c skulk -f"]
    for spec in specs:
        if spec.path:
            below = " ".join(name for name, _ in spec.subcommands)
            guard = f"__fish_seen_subcommand_from {spec.path[-1]}"
            if below:
                guard += f"; and not __fish_seen_subcommand_from {below}"
            if len(spec.path) > 1:
                guard = f"__fish_seen_subcommand_from {spec.path[0]}; and {guard}"
        else:
            guard = "__fish_use_subcommand"
        for name, help in spec.subcommands:
            lines.append(f"complete -c skulk -n {shlex.quote(guard)} -a {name} "
                         f"-d {shlex.quote(help[:60])}")
        for value in spec.values:
            lines.append(f"complete -c skulk -n {shlex.quote(guard)} -a {value}")
        for option, help in spec.options:
            lines.append(f"complete -c skulk -n {shlex.quote(guard)} -l {option[2:]} "
                         f"-d {shlex.quote(help[:60])}")
    return "\n".join(lines) + "\n"


def completion_script(shell: str, parser: argparse.ArgumentParser) -> str:
    specs = command_specs(parser)
    return {"bash": bash_script, "zsh": zsh_script, "fish": fish_script}[shell](specs)
