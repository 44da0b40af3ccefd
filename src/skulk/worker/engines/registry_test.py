"""The engine registry: every placeable engine is a wire name, descriptions import no
engine, and options are parsed with errors that name the bad value."""

import json
import subprocess
import sys
from typing import get_args

import pytest

from skulk.fitting.engines import ENGINE_PREFERENCE
from skulk.shared.types.model_cards import EngineName
from skulk.testing.echo.description import EchoOptions
from skulk.worker.engines.mlx.options import MlxOptions
from skulk.worker.engines.options import EngineOptionError
from skulk.worker.engines.registry import (
    ENGINES,
    EXTRA_ENGINES_VARIABLE,
    PLACEABLE,
    engine_description,
)


def test_the_wire_engine_names_are_the_placeable_engines() -> None:
    assert set(get_args(EngineName)) == set(ENGINE_PREFERENCE)
    assert [engine.name for engine in PLACEABLE] == list(ENGINE_PREFERENCE)
    assert all(ENGINES[name].name == name for name in ENGINES)


def test_reading_the_registry_imports_no_engine() -> None:
    # A fresh interpreter: another test in this process may have imported an engine.
    code = ("import json, sys; import skulk.master.placement, skulk.worker.telemetry; "
            "print(json.dumps(sorted(m for m in sys.modules "
            "if m.split('.')[0] in ('mlx', 'mlx_lm', 'llama_cpp') "
            "or m.endswith('.engine'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=60).stdout
    assert json.loads(out) == []


def test_options_are_typed_from_their_strings() -> None:
    options = MlxOptions.parse({"batching": "off", "max_batch": "4",
                                "ring_hosts": "10.0.0.1:53000,10.0.0.2:53001"})
    assert not options.batching and options.max_batch == 4
    assert options.ring_hosts == ["10.0.0.1:53000", "10.0.0.2:53001"]
    assert EchoOptions.parse({"fail_load": "1", "delay": "0.5"}).fail_load


@pytest.mark.parametrize(("raw", "named"), [
    ({"max_batch": "many"}, "max_batch='many'"),
    ({"drafter": "oracle"}, "drafter='oracle'"),
    ({"max_btach": "4"}, "unknown engine option 'max_btach'"),
])
def test_a_bad_option_is_refused_by_name(raw: dict[str, str], named: str) -> None:
    with pytest.raises(EngineOptionError, match=named):
        MlxOptions.parse(raw)


def test_a_test_engine_is_found_only_through_the_variable(
        monkeypatch: pytest.MonkeyPatch) -> None:
    assert "echo" not in ENGINES  # the product's registry never names it
    monkeypatch.setenv(EXTRA_ENGINES_VARIABLE, "")
    with pytest.raises(ValueError, match="unknown engine 'echo'"):
        engine_description("echo")
    monkeypatch.setenv(EXTRA_ENGINES_VARIABLE, "skulk.testing.echo.description:ECHO")
    assert engine_description("echo").options is EchoOptions
    monkeypatch.setenv(EXTRA_ENGINES_VARIABLE, "skulk.testing.echo.description:EchoOptions")
    with pytest.raises(ValueError, match="names no engine description"):
        engine_description("echo")
