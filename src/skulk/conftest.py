import pytest

from skulk.testing.echo.description import use_test_engines

# Runners started by these tests may name the echo engine; they inherit this.
use_test_engines()


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
