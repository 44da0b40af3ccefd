"""Transport endpoints as Zenoh spells them (`proto/HOST:PORT`): their TLS form, host and
port. Below routing and trust, which both read them."""


def tls_endpoint(endpoint: str) -> str:
    """`tcp/HOST:PORT` as the TLS endpoint on the same address; other forms unchanged."""
    return "tls/" + endpoint[len("tcp/"):] if endpoint.startswith("tcp/") else endpoint


def endpoint_host(endpoint: str) -> str:
    """The host of `proto/HOST:PORT` (IPv6 hosts in brackets lose them)."""
    address = endpoint.split("/", 1)[-1]
    host = address.rsplit(":", 1)[0]
    return host[1:-1] if host.startswith("[") and host.endswith("]") else host


def endpoint_port(endpoint: str) -> int:
    return int(endpoint.rsplit(":", 1)[-1].split("#", 1)[0])
