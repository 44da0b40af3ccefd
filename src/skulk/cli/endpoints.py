"""`--listen` and `--peer` endpoints: `tcp/HOST:PORT`, checked here so a typo is one line
instead of a Zenoh configuration error naming paths inside Zenoh's build tree."""

from skulk.startup_failure import USAGE, StartupFailure

_EXAMPLE = {"--listen": "tcp/0.0.0.0:7447", "--peer": "tcp/10.0.0.2:7447"}


def normalized_endpoint(text: str, flag: str) -> str:
    """`text` as a Zenoh TCP endpoint; a bare `HOST:PORT` means `tcp/HOST:PORT`. A peer
    needs a real port; a listen endpoint may give 0 (any free port)."""
    protocol, slash, address = text.strip().partition("/")
    if not slash:
        protocol, address = "tcp", protocol
    host, port = _split_host_port(address)
    if protocol != "tcp" or not host or port is None or not _port_allowed(port, flag):
        raise StartupFailure(
            f"{flag} {text!r}: expected tcp/HOST:PORT, e.g. {flag} {_EXAMPLE[flag]}", USAGE)
    return f"tcp/{address}"


def endpoint_port(endpoint: str) -> int:
    """The port of a normalized endpoint."""
    port = _split_host_port(endpoint.partition("/")[2])[1]
    assert port is not None, endpoint
    return port


def endpoint_host(endpoint: str) -> str:
    """The host of a normalized endpoint, without the brackets of an IPv6 address."""
    return _split_host_port(endpoint.partition("/")[2])[0].strip("[]")


def _split_host_port(address: str) -> tuple[str, int | None]:
    host, colon, port = address.rpartition(":")
    if not colon or not port.isdigit():
        return address, None
    if ":" in host and not (host.startswith("[") and host.endswith("]")):
        return address, None  # an IPv6 address needs brackets around it
    return host, int(port)


def _port_allowed(port: int, flag: str) -> bool:
    return (0 if flag == "--listen" else 1) <= port <= 65535
