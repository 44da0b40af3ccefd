import socket

import pytest

from skulk.api.server import bind_api_socket
from skulk.startup_failure import ENVIRONMENT, StartupFailure


def test_a_taken_api_port_is_a_startup_failure_not_an_exit() -> None:
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        with pytest.raises(StartupFailure) as refused:
            bind_api_socket("127.0.0.1", port)
    assert refused.value.exit_code == ENVIRONMENT
    assert f"the API port {port} is already in use" in refused.value.message


def test_a_free_port_is_bound_for_uvicorn() -> None:
    with bind_api_socket("127.0.0.1", 0) as sock:
        assert sock.getsockname()[1] > 0
