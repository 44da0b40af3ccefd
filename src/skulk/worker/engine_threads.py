"""How many compute threads a runner uses when `--threads` does not say.

A runner's threads spin on their cores for the whole of a step: with one per logical core,
hyperthreads and the node's own serving path (HTTP, streams, the cluster plane, about half
a millisecond of CPU per token) fight them for the same cores and every step waits for its
slowest thread. Physical cores, less one for the serving path on a node that serves the
API, keep them apart.
"""

import psutil


def default_engine_threads(physical_cores: int | None, logical_cores: int | None,
                           serves_api: bool) -> int:
    """The physical cores (the logical ones when they are not known), less one on a node
    that serves the API; at least 1."""
    cores = physical_cores or logical_cores or 1
    return max(1, cores - 1) if serves_api else cores


def engine_threads_here(serves_api: bool) -> int:
    """`default_engine_threads` for this machine."""
    return default_engine_threads(psutil.cpu_count(logical=False), psutil.cpu_count(),
                                  serves_api)


def threads_explained(serves_api: bool) -> str:
    """What the default is here and why, for `skulk doctor` and the log."""
    physical = psutil.cpu_count(logical=False)
    cores = f"{physical} physical cores" if physical else f"{psutil.cpu_count()} cores"
    spared = ", one left to the API and the cluster plane" if serves_api else ""
    threads = engine_threads_here(serves_api)
    return f"{threads} compute thread{'' if threads == 1 else 's'} per runner ({cores}{spared})"
