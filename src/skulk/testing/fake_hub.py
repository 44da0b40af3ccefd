"""A stand-in for the Hugging Face hub on loopback, for tests (no hub is reachable here).

It speaks the parts of the hub's HTTP API that `huggingface_hub` uses to list and fetch
a model repository: repo info with its siblings, the recursive tree with sizes and LFS
sha256, and `resolve` with HEAD/GET, ETag, `X-Repo-Commit` and range requests. Tests
point `HF_ENDPOINT` at `FakeHub.endpoint`. Faults a test can ask for: serve bytes that
differ from the advertised sha256 (`corrupt`), hold a download after some bytes until
released (`stall_after`, so a test can kill the downloader mid-file), and answer every
request with a 503 (`down`).
"""

import hashlib
import json
import re
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlsplit

# Files at least this big are stored with LFS on the real hub: their ETag is the sha256.
_LFS_MIN_BYTES = 1 << 20
_LFS_SUFFIXES = (".gguf", ".safetensors", ".bin")
_CHUNK_BYTES = 1 << 20


@dataclass(frozen=True)
class HubFile:
    """One file of a repository, served from disk."""

    path: Path

    @property
    def size(self) -> int:
        return self.path.stat().st_size


@dataclass
class _Entry:
    file: HubFile
    sha256: str
    git_sha1: str
    lfs: bool


@dataclass
class HubRepo:
    """A model repository: its files by name and the commit they form."""

    repo_id: str
    files: dict[str, _Entry] = field(default_factory=dict)

    @property
    def commit(self) -> str:
        digest = hashlib.sha1(self.repo_id.encode())
        for name in sorted(self.files):
            digest.update(name.encode() + self.files[name].sha256.encode())
        return digest.hexdigest()


def _file_hashes(path: Path) -> tuple[str, str]:
    sha256 = hashlib.sha256()
    size = path.stat().st_size
    git = hashlib.sha1(f"blob {size}\0".encode())
    with path.open("rb") as handle:
        while block := handle.read(_CHUNK_BYTES):
            sha256.update(block)
            git.update(block)
    return sha256.hexdigest(), git.hexdigest()


class FakeHub:
    """Serves repositories on 127.0.0.1 until `close()`; `with FakeHub() as hub:`."""

    def __init__(self) -> None:
        self.repos: dict[str, HubRepo] = {}
        self.corrupt: set[tuple[str, str]] = set()
        self.stall_after: dict[tuple[str, str], int] = {}
        self.stalled = threading.Event()
        self.release = threading.Event()
        self.down = False
        # (method, path, Range header or "") of every request, in order.
        self.requests: list[tuple[str, str, str]] = []
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    @property
    def endpoint(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def add_file(self, repo_id: str, name: str, path: Path) -> None:
        """Publish `path` as `name` in `repo_id` (the repository is made on first use)."""
        sha256, git_sha1 = _file_hashes(path)
        lfs = path.stat().st_size >= _LFS_MIN_BYTES or name.endswith(_LFS_SUFFIXES)
        repo = self.repos.setdefault(repo_id, HubRepo(repo_id))
        repo.files[name] = _Entry(HubFile(path), sha256, git_sha1, lfs)

    def add_directory(self, repo_id: str, directory: Path) -> None:
        """Publish every file under `directory`, named by its path relative to it."""
        for path in sorted(p for p in directory.rglob("*") if p.is_file()):
            self.add_file(repo_id, path.relative_to(directory).as_posix(), path)

    def close(self) -> None:
        self.release.set()
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> "FakeHub":
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


_INFO = re.compile(r"^/api/models/(?P<repo>[^/]+/[^/]+)(?:/revision/(?P<rev>[^/]+))?$")
_TREE = re.compile(r"^/api/models/(?P<repo>[^/]+/[^/]+)/tree/(?P<rev>[^/]+)(?:/(?P<path>.*))?$")
_RESOLVE = re.compile(r"^/(?P<repo>[^/]+/[^/]+)/resolve/(?P<rev>[^/]+)/(?P<path>.+)$")
_RANGE = re.compile(r"^bytes=(\d+)-(\d*)$")


def _sibling(name: str, entry: _Entry) -> dict[str, object]:
    sibling: dict[str, object] = {"rfilename": name, "size": entry.file.size,
                                  "blobId": entry.git_sha1}
    if entry.lfs:
        sibling["lfs"] = {"sha256": entry.sha256, "size": entry.file.size,
                          "pointerSize": 134}
    return sibling


def _tree_item(name: str, entry: _Entry) -> dict[str, object]:
    item: dict[str, object] = {"type": "file", "path": name, "size": entry.file.size,
                               "oid": entry.git_sha1}
    if entry.lfs:
        item["lfs"] = {"oid": entry.sha256, "size": entry.file.size, "pointerSize": 134}
    return item


def _handler_for(hub: FakeHub) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            self._route(head=False)

        def do_HEAD(self) -> None:
            self._route(head=True)

        def _route(self, *, head: bool) -> None:
            path = unquote(urlsplit(self.path).path)
            hub.requests.append((self.command, path, self.headers.get("Range", "")))
            if hub.down:
                self._json(503, {"error": "the stand-in hub is down"}, head)
                return
            if match := _TREE.match(path):
                self._tree(match.group("repo"), match.group("path") or "", head)
            elif match := _INFO.match(path):
                self._info(match.group("repo"), head)
            elif match := _RESOLVE.match(path):
                self._resolve(match.group("repo"), match.group("path"), head)
            else:
                self._json(404, {"error": f"no route for {path}"}, head)

        def _repo(self, repo_id: str, head: bool) -> HubRepo | None:
            repo = hub.repos.get(repo_id)
            if repo is None:
                self._json(404, {"error": "Repository not found"}, head,
                           {"X-Error-Code": "RepoNotFound"})
            return repo

        def _info(self, repo_id: str, head: bool) -> None:
            if (repo := self._repo(repo_id, head)) is None:
                return
            siblings = [_sibling(name, entry) for name, entry in sorted(repo.files.items())]
            self._json(200, {"_id": repo.commit[:24], "id": repo_id, "modelId": repo_id,
                             "sha": repo.commit, "private": False, "gated": False,
                             "disabled": False, "downloads": 0, "likes": 0, "tags": [],
                             "lastModified": "2026-01-01T00:00:00.000Z",
                             "siblings": siblings}, head)

        def _tree(self, repo_id: str, prefix: str, head: bool) -> None:
            if (repo := self._repo(repo_id, head)) is None:
                return
            items = [_tree_item(name, entry) for name, entry in sorted(repo.files.items())
                     if not prefix or name.startswith(prefix.rstrip("/") + "/")]
            self._json(200, items, head)

        def _resolve(self, repo_id: str, name: str, head: bool) -> None:
            if (repo := self._repo(repo_id, head)) is None:
                return
            entry = repo.files.get(name)
            if entry is None:
                self._json(404, {"error": "Entry not found"}, head,
                           {"X-Error-Code": "EntryNotFound", "X-Repo-Commit": repo.commit})
                return
            size = entry.file.size
            start, end = 0, size - 1
            status = 200
            if (requested := self.headers.get("Range")) and (match := _RANGE.match(requested)):
                start = int(match.group(1))
                end = min(int(match.group(2)) if match.group(2) else size - 1, size - 1)
                status = 206
            etag = entry.sha256 if entry.lfs else entry.git_sha1
            self.send_response(status)
            self.send_header("Content-Length", str(end - start + 1))
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Accept-Ranges", "bytes")
            self.send_header("ETag", f'"{etag}"')
            self.send_header("X-Repo-Commit", repo.commit)
            if status == 206:
                self.send_header("Content-Range", f"bytes {start}-{end}/{size}")
            self.end_headers()
            if not head:
                self._send_bytes(repo_id, name, entry, start, end)

        def _send_bytes(self, repo_id: str, name: str, entry: _Entry, start: int,
                        end: int) -> None:
            stall = hub.stall_after.get((repo_id, name))
            corrupt = (repo_id, name) in hub.corrupt
            with entry.file.path.open("rb") as handle:
                handle.seek(start)
                offset = start
                while offset <= end:
                    block = handle.read(min(_CHUNK_BYTES, end - offset + 1))
                    if stall is not None and offset < stall <= offset + len(block):
                        self.wfile.write(block[:stall - offset])
                        self.wfile.flush()
                        hub.stalled.set()
                        hub.release.wait(timeout=60)
                        block = block[stall - offset:]
                        offset = stall
                    if corrupt and offset == 0 and block:
                        block = bytes([block[0] ^ 0xFF]) + block[1:]
                    self.wfile.write(block)
                    offset += len(block)

        def _json(self, status: int, body: object, head: bool,
                  headers: dict[str, str] | None = None) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.end_headers()
            if not head:
                self.wfile.write(data)

    return Handler
