import socket

import pytest

from skulk.cli.doctor_cluster import clock_offset, peer_api_and_clock, peer_checks, plane_security
from skulk.testing.ports import free_port


def test_clock_offset_from_a_one_second_date_header() -> None:
    # Sent and answered at 1000.2 and 1000.4; the peer said 00:16:40 (1000 s), i.e. ~1000.5.
    assert clock_offset("Thu, 01 Jan 1970 00:16:40 GMT", 1000.2, 1000.4) == \
        pytest.approx(0.2)
    assert clock_offset("Thu, 01 Jan 1970 00:17:40 GMT", 1000.2, 1000.4) == pytest.approx(60.2)
    assert clock_offset(None, 0.0, 0.0) is None
    assert clock_offset("not a date", 0.0, 0.0) is None


def test_each_peer_port_is_reached_or_failed_with_the_fix() -> None:
    with socket.socket() as listening:
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        open_port, closed_port = listening.getsockname()[1], free_port()
        checks = peer_checks("node-b", None, {"reachability": {
            "addresses": ["127.0.0.1"], "listen_ports": [open_port, closed_port]}})
    assert [(check.name, check.level) for check in checks] == [
        (f"peer node-b port {open_port}", "OK"), (f"peer node-b port {closed_port}", "FAIL")]
    assert "firewall" in checks[1].fix


def test_a_silent_peer_api_fails_and_an_insecure_plane_warns() -> None:
    silent = peer_api_and_clock("node-b", f"http://127.0.0.1:{free_port()}")
    assert silent.level == "FAIL" and "does not answer" in silent.detail
    assert plane_security("insecure").level == "WARN"
    assert plane_security("tls").level == "OK"
