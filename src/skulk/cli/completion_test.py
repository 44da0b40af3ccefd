"""Completion scripts come from the parser; the bash one is run by bash itself."""

import shutil
import subprocess

import pytest

from skulk.cli.completion import completion_script
from skulk.cli.main import build_parser


def bash_completes(words: str) -> list[str]:
    """What the generated `_skulk` offers after `words` (a trailing space: a new word)."""
    script = completion_script("bash", build_parser())
    program = (f'{script}\nCOMP_WORDS=({words}); [[ "{words}" == *" " ]] && COMP_WORDS+=("")\n'
               'COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); _skulk; echo "${COMPREPLY[*]}"')
    done = subprocess.run(["bash", "-c", program], capture_output=True, text=True, timeout=10)
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


@pytest.mark.skipif(shutil.which("bash") is None, reason="no bash here")
def test_bash_completes_commands_nested_commands_flags_and_choices() -> None:
    assert bash_completes("skulk do") == ["doctor"]
    assert bash_completes("skulk models l") == ["list"]
    assert bash_completes("skulk run --api-p") == ["--api-port"]
    assert "--api-port" in bash_completes("skulk --api")  # bare skulk takes run's flags
    assert bash_completes("skulk completion ")[:3] == ["bash", "zsh", "fish"]
    assert bash_completes("skulk models list --cl") == ["--cluster"]


def test_zsh_and_fish_scripts_name_every_command() -> None:
    zsh = completion_script("zsh", build_parser())
    assert "bashcompinit" in zsh and "complete -o default -F _skulk skulk" in zsh
    fish = completion_script("fish", build_parser())
    for command in ("run", "status", "doctor", "logs", "stop", "completion"):
        assert f"-n __fish_use_subcommand -a {command} " in fish
    assert "-n '__fish_seen_subcommand_from run' -l api-port" in fish
