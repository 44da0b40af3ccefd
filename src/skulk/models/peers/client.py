"""Downloads from a peer's weights endpoint: resumable, verified, TLS with the node's
own certificate."""

import hashlib
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import quote

import httpx

from skulk.models.peers.serving import MANIFESTS_PREFIX, WEIGHTS_PREFIX
from skulk.models.peers.tls import client_context
from skulk.models.store.free_space import require_space
from skulk.models.store.hashing import file_sha256
from skulk.models.store.manifest import StoredFile, StoreEntry
from skulk.models.store.pull import CorruptFile
from skulk.shared.types.ids import NodeId
from skulk.shared.types.telemetry import HeldFile
from skulk.trust.files import TlsFiles

CHUNK_BYTES = 1 << 20
# Connecting and each read; a whole file may take as long as it needs.
TIMEOUT_SECONDS = 30.0


class PeerUnavailable(ConnectionError):
    """The peer could not be reached or refused the request; another source may serve."""


@contextmanager
def peer_client(tls: TlsFiles | None, *, peer_node: NodeId | None = None
                ) -> Iterator[httpx.Client]:
    """An HTTP client for one peer: with `tls`, presenting this node's certificate,
    trusting only the cluster CA and (given `peer_node`) checking the server is that node.
    Transport failures come out as PeerUnavailable."""
    verify = False if tls is None else client_context(tls, check_node=peer_node is not None)
    try:
        with httpx.Client(verify=verify, timeout=TIMEOUT_SECONDS, trust_env=False) as client:
            yield client
    except httpx.HTTPError as error:
        raise PeerUnavailable(f"{type(error).__name__}: {error}") from error


def _extensions(peer_node: NodeId | None) -> dict[str, object]:
    # The node id is the certificate's DNS name; the URL's host is only an address.
    return {} if peer_node is None else {"sni_hostname": peer_node}


def _check_status(response: httpx.Response, expected: set[int]) -> None:
    if response.status_code not in expected:
        response.read()
        raise PeerUnavailable(f"{response.request.url} answered {response.status_code}: "
                              f"{response.text.strip()[:200]}")


def fetch_manifest(url_base: str, tls: TlsFiles | None, entry_dir: str, *,
                   peer_node: NodeId | None = None) -> StoreEntry:
    """The store manifest of `entry_dir` on the peer at `url_base`."""
    with peer_client(tls, peer_node=peer_node) as client:
        response = client.get(f"{url_base}{MANIFESTS_PREFIX}{quote(entry_dir, safe='')}",
                              extensions=_extensions(peer_node))
        _check_status(response, {200})
        return StoreEntry.model_validate_json(response.content)


def fetch_from_peer(url_base: str, tls: TlsFiles | None, entry_dir: str,
                    file: StoredFile | HeldFile, target_dir: Path,
                    on_bytes: Callable[[int], None], *,
                    peer_node: NodeId | None = None) -> Path:
    """Download `file` of the peer's store entry `entry_dir` to `target_dir/<file name>`.

    Bytes land in `<name>.part` first; an existing `.part` is resumed with a range request.
    The finished file is checked against `file.sha256`: a mismatch removes it and raises
    CorruptFile. `on_bytes` is called with each chunk's size as it arrives. Raises
    NotEnoughSpace before the first byte when the disk cannot hold the rest, and
    PeerUnavailable when the peer cannot serve it."""
    final = target_dir / file.name
    part = final.with_name(final.name + ".part")
    part.parent.mkdir(parents=True, exist_ok=True)
    have = part.stat().st_size if part.is_file() else 0
    if have > file.size_bytes:
        part.unlink()
        have = 0
    require_space(target_dir, entry_dir, file.size_bytes - have)
    if have < file.size_bytes:
        digest = _download(f"{url_base}{WEIGHTS_PREFIX}{quote(entry_dir, safe='')}/"
                           f"{quote(file.name)}", tls, part, have, file.size_bytes, on_bytes,
                           peer_node)
        actual = digest.hexdigest()
    else:
        actual = file_sha256(part)
    if actual != file.sha256:
        part.unlink()
        raise CorruptFile(f"{file.name} from {url_base}: its sha256 is {actual}, but the "
                          f"peer advertised {file.sha256}; the file was removed and will not "
                          "be loaded")
    os.replace(part, final)
    return final


def _download(url: str, tls: TlsFiles | None, part: Path, have: int, size: int,
              on_bytes: Callable[[int], None], peer_node: NodeId | None) -> "hashlib._Hash":
    """Append the rest of the file to `part`; returns the sha256 of the whole part, hashed
    as the bytes arrive (the kept prefix first), so the file is not read back to check it."""
    headers = {"Range": f"bytes={have}-"} if have else {}
    with peer_client(tls, peer_node=peer_node) as client, \
            client.stream("GET", url, headers=headers,
                          extensions=_extensions(peer_node)) as response:
        _check_status(response, {200, 206})
        if response.status_code == 206:
            expected = f"bytes {have}-{size - 1}/{size}"
            if response.headers.get("Content-Range") != expected:
                raise PeerUnavailable(f"{url} sent {response.headers.get('Content-Range')} "
                                      f"for a resume that needs {expected}")
        else:
            have = 0  # the peer sent the whole file: start the part over
        digest = _prefix_sha256(part, have)
        with part.open("ab" if have else "wb") as out:
            for chunk in response.iter_raw():
                have += len(chunk)
                if have > size:
                    raise CorruptFile(f"{url} sent more than the {size} bytes it advertised")
                out.write(chunk)
                digest.update(chunk)
                on_bytes(len(chunk))
    if have != size:
        raise PeerUnavailable(f"{url} ended after {have} of {size} bytes; the part is kept "
                              "and the next attempt resumes it")
    return digest


def _prefix_sha256(part: Path, length: int) -> "hashlib._Hash":
    digest = hashlib.sha256()
    if length:
        with part.open("rb") as handle:
            while block := handle.read(min(CHUNK_BYTES, length)):
                digest.update(block)
                length -= len(block)
    return digest
