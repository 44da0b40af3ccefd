import os
import socket

from skulk.cli.ports import port_holder, port_in_use, port_in_use_message


def test_a_listening_port_is_in_use_and_its_holder_named() -> None:
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        assert port_in_use("127.0.0.1", port)
        holder = port_holder(port)  # None where this user may not list sockets
        assert holder is None or holder.endswith(f"(pid {os.getpid()})")
        message = port_in_use_message(port, "API", "--api-port")
        assert message.startswith(f"API port {port} is already in use")
        assert message.endswith("choose another with --api-port")
    assert not port_in_use("127.0.0.1", port)
