import os
import socket

from skulk.cli.ports import port_holder, port_in_use, port_in_use_message, runs_skulk


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


def test_a_skulk_process_is_told_by_its_command_not_by_its_folder() -> None:
    assert runs_skulk(["/opt/skulk/.venv/bin/skulk", "run"])
    assert runs_skulk(["/usr/bin/python3", "/opt/venv/bin/skulk", "run"])
    assert runs_skulk(["python", "-m", "skulk.cli.main", "run"])
    # A checkout named skulk runs pytest and other Pythons from its .venv: not a node.
    assert not runs_skulk(["/srv/skulk/.venv/bin/python", "-m", "pytest", "-q"])
    assert not runs_skulk(["/srv/skulk/.venv/bin/python", "-c", "import skulk"])
    assert not runs_skulk([])
