import pytest

from skulk.cli.endpoints import endpoint_host, endpoint_port, normalized_endpoint
from skulk.startup_failure import USAGE, StartupFailure


def test_a_bare_host_and_port_means_tcp() -> None:
    assert normalized_endpoint("10.0.0.1:7447", "--peer") == "tcp/10.0.0.1:7447"
    assert normalized_endpoint("tcp/[::1]:7447", "--peer") == "tcp/[::1]:7447"
    assert normalized_endpoint("0.0.0.0:0", "--listen") == "tcp/0.0.0.0:0"


@pytest.mark.parametrize("text", ["10.0.0.1", "udp/10.0.0.1:7447", "tcp/10.0.0.1:0",
                                  "tcp/:7447", "::1:7447", "10.0.0.1:99999", "tcp/h:x"])
def test_a_peer_without_a_usable_address_is_a_usage_error(text: str) -> None:
    with pytest.raises(StartupFailure) as refused:
        normalized_endpoint(text, "--peer")
    assert refused.value.exit_code == USAGE
    assert "expected tcp/HOST:PORT, e.g. --peer tcp/10.0.0.2:7447" in refused.value.message


def test_host_and_port_of_an_endpoint() -> None:
    assert endpoint_port("tcp/[::1]:7447") == 7447
    assert endpoint_host("tcp/[::1]:7447") == "::1"
