"""For every test, unit or integration: no test reaches the real model hub. Nodes a test
starts inherit this environment, so a placement of a catalogue model whose weights no
node holds fails at once against a closed loopback port (tests that need a hub start the
stand-in one, `skulk.testing.fake_hub`, and point HF_ENDPOINT at it themselves)."""

import os

import pytest

NO_HUB = "http://127.0.0.1:9"  # the discard port: closed, refused at once


def pytest_configure(config: pytest.Config) -> None:
    os.environ["HF_ENDPOINT"] = NO_HUB
    os.environ["HF_HUB_DISABLE_TELEMETRY"] = "1"
