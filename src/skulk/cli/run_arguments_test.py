import argparse
import subprocess
import sys

import pytest

from skulk.cli.argument_types import whole_number


def test_whole_number_takes_zero_or_more_and_says_what_is_wrong() -> None:
    assert whole_number("0") == 0 and whole_number("16") == 16
    with pytest.raises(argparse.ArgumentTypeError, match="'x' is not a whole number"):
        whole_number("x")
    with pytest.raises(argparse.ArgumentTypeError, match="-1 is negative; give 0 or more"):
        whole_number("-1")


def test_building_the_cli_imports_neither_the_node_nor_its_api() -> None:
    # A fresh interpreter: this one has imported everything already.
    probe = ("import sys, skulk.cli.main as m; m.build_parser(); "
             "print(sorted({'fastapi', 'skulk.cli.run', 'skulk.node'} & set(sys.modules)))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]", "short commands (status, place...) would pay for them"
