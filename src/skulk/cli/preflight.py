"""What `skulk run` checks before it starts anything, so the common mistakes end in one
line that says what to do instead of a traceback from deep inside a server."""

import difflib
import sys
import tempfile
from pathlib import Path

from loguru import logger

from skulk.cli.endpoints import endpoint_host, endpoint_port
from skulk.cli.ports import port_in_use, port_in_use_message
from skulk.models.catalog import ModelCatalog
from skulk.node_config import NodeConfig
from skulk.startup_failure import ENVIRONMENT, USAGE, StartupFailure
from skulk.worker.engines.llama_cpp.description import libllama_present, library_folders
from skulk.worker.telemetry import probe_backends

REBUILD_ENGINE = ("rebuild it with `make install`, or "
                  "`tools/llama-cpp-backends.sh .venv/bin/python`")


def check_before_start(config: NodeConfig) -> None:
    """Raise `StartupFailure` for the first thing that would stop this node starting."""
    check_data_dir(config.data_dir)
    if config.run_api and port_in_use(config.api_host, config.api_port):
        raise StartupFailure(port_in_use_message(config.api_port, "the API", "--api-port"))
    for endpoint in config.listen:
        port = endpoint_port(endpoint)
        if port and port_in_use(endpoint_host(endpoint), port):
            raise StartupFailure(port_in_use_message(
                port, "the cluster transport (--listen)", "--listen tcp/HOST:PORT"))
    if config.run_worker:
        check_engines()
    check_served_models(config)


def check_data_dir(data_dir: Path) -> None:
    """The data dir exists (made if need be) and takes a new file."""
    try:
        data_dir.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=data_dir):
            pass
    except OSError as error:
        raise StartupFailure(
            f"the data dir {data_dir} cannot be created or written ({error.strerror}): "
            "choose another with --data-dir or $SKULK_HOME", ENVIRONMENT) from error


def check_engines() -> None:
    """A worker needs an engine that can load: llama-cpp-python with its native library,
    or MLX."""
    if library_folders() and not libllama_present():
        raise StartupFailure(
            f"llama-cpp-python is installed without libllama (looked in "
            f"{', '.join(map(str, library_folders()))}; did its build fail?): "
            f"{REBUILD_ENGINE}", ENVIRONMENT)
    if not probe_backends(sys.platform):
        raise StartupFailure(
            f"no inference engine is installed (llama-cpp-python or MLX): {REBUILD_ENGINE}; "
            "or start this node with --no-worker", ENVIRONMENT)


def check_served_models(config: NodeConfig) -> None:
    """Every `--serve` model is in this node's catalogue. With `--peer`, an unknown one
    may be a card a peer's store announces, so it only warns."""
    if not config.serve:
        return
    catalog = ModelCatalog.builtin(config.data_dir / "models")
    for model in config.serve:
        if catalog.resolve(model) is not None:
            continue
        names = sorted({name for card in catalog.cards()
                        for name in (card.model_id, *card.aliases)})
        close = difflib.get_close_matches(model, names, n=3, cutoff=0.5)
        hint = f"did you mean {', '.join(close)}? " if close else ""
        message = (f"--serve {model}: no such model in this node's catalogue; {hint}"
                   "`skulk models list` shows them all")
        if config.peers:
            logger.warning("{} (a peer's store may announce it)", message)
            continue
        raise StartupFailure(message, USAGE)
