from skulk.cluster.node_endpoints import api_endpoint, node_endpoints, peer_form


def test_bound_endpoints_read_as_peer_endpoints() -> None:
    assert peer_form(["tls/127.0.0.1:7447", "tls/[::1]:7447#iface=lo", "tcp/10.0.0.2:7447",
                      "udp/10.0.0.2:7447", "tcp/10.0.0.2:7447"]) == [
        "tcp/127.0.0.1:7447", "tcp/[::1]:7447", "tcp/10.0.0.2:7447"]


def test_a_loopback_api_is_shown_as_bound_and_an_advertised_one_as_told() -> None:
    assert api_endpoint("127.0.0.1", 52415, None) == "http://127.0.0.1:52415"
    assert api_endpoint("::1", 52415, None) == "http://[::1]:52415"
    assert api_endpoint("0.0.0.0", 52415, "http://10.0.0.2:52415") == "http://10.0.0.2:52415"
    assert node_endpoints([], "127.0.0.1", 1, None, serves_api=False).api is None
