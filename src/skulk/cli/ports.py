"""Whether a TCP port can be bound here, and which process holds it when it cannot."""

import errno
import os
import socket

import psutil


def port_in_use(host: str, port: int) -> bool:
    """Whether binding `host:port` fails because something already holds it (other bind
    errors, such as an address this machine lacks, are left to the real bind)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        # As a listening server binds: SO_REUSEADDR ignores sockets left in TIME_WAIT.
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as error:
            return error.errno == errno.EADDRINUSE
    return False


def port_holder(port: int) -> str | None:
    """`name (pid N)` of the process listening on `port`, when this user may see it."""
    try:
        connections = psutil.net_connections(kind="tcp")
    except (psutil.Error, OSError):
        return None
    for connection in connections:
        if (connection.status == psutil.CONN_LISTEN and connection.laddr
                and connection.laddr.port == port and connection.pid is not None):
            return _describe(connection.pid)
    return None


def _describe(pid: int) -> str:
    try:
        process = psutil.Process(pid)
        command = process.cmdline()
        name = process.name()
    except psutil.Error:
        return f"pid {pid}"
    return f"{'skulk' if runs_skulk(command) else name} (pid {pid})"


def runs_skulk(command: list[str]) -> bool:
    """Whether a command line runs Skulk: the `skulk` command (alone or through its
    interpreter) or `python -m skulk...`; a Python that merely lives in a folder named
    skulk (a checkout's .venv) is not a node."""
    head = command[:4]
    for position, argument in enumerate(head):
        if os.path.basename(argument) == "skulk":
            return True
        following = head[position + 1:position + 2]
        if argument == "-m" and following and following[0].split(".")[0] == "skulk":
            return True
    return False


def port_in_use_message(port: int, what: str, flag: str) -> str:
    """One line naming the port, its holder when found, and the flag that moves it."""
    holder = port_holder(port)
    held = f" by {holder}" if holder else ""
    return f"{what} port {port} is already in use{held}: stop it or choose another with {flag}"
