from skulk.api.advertised_url import advertised_api_url


def test_a_loopback_api_is_not_advertised() -> None:
    assert advertised_api_url("127.0.0.1", 52415, ["10.0.0.2"]) is None
    assert advertised_api_url("localhost", 52415, ["10.0.0.2"]) is None


def test_an_api_on_every_interface_is_advertised_at_a_reachable_address() -> None:
    assert advertised_api_url("0.0.0.0", 80, ["127.0.0.1", "10.0.0.2"]) == "http://10.0.0.2:80"
    assert advertised_api_url("::", 80, ["fd00::2"]) == "http://[fd00::2]:80"
    assert advertised_api_url("0.0.0.0", 80, ["127.0.0.1"]) is None


def test_a_specific_address_or_name_is_advertised_as_given() -> None:
    assert advertised_api_url("10.0.0.7", 8000, []) == "http://10.0.0.7:8000"
    assert advertised_api_url("gpu-box.lan", 8000, []) == "http://gpu-box.lan:8000"
