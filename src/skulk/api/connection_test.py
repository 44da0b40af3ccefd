from types import SimpleNamespace

from skulk.api.connection import _SCOPE_KEY, connection_of


class _Transport:
    def __init__(self, tls: bool) -> None:
        self._tls = tls

    def get_extra_info(self, name: str) -> object:
        return object() if name == "sslcontext" and self._tls else None


def _cycle(tls: bool = False) -> SimpleNamespace:
    return SimpleNamespace(transport=_Transport(tls), flow=SimpleNamespace(write_paused=False),
                           chunked_encoding=True, disconnected=False)


def test_a_plain_http_cycle_is_the_connection() -> None:
    cycle = _cycle()
    assert connection_of({_SCOPE_KEY: cycle}) is cycle


def test_tls_and_no_cycle_keep_the_python_path() -> None:
    assert connection_of({_SCOPE_KEY: _cycle(tls=True)}) is None
    assert connection_of({}) is None


def test_a_uvicorn_without_an_internal_the_byte_path_reads_keeps_the_python_path() -> None:
    for missing in ("transport", "flow", "chunked_encoding", "disconnected"):
        cycle = _cycle()
        delattr(cycle, missing)
        assert connection_of({_SCOPE_KEY: cycle}) is None, missing
    cycle = _cycle()
    del cycle.flow.write_paused
    assert connection_of({_SCOPE_KEY: cycle}) is None
