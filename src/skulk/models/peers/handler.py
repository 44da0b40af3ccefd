"""One connection's requests to the weights endpoint (HTTP/1.1, kept alive)."""

from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from loguru import logger

from skulk.models.peers.ranges import ByteRange, RangeNotSatisfiable, parse_range
from skulk.models.peers.serving import ServedFile, served_file, served_manifest

CHUNK_BYTES = 1 << 20


class StoreServer(ThreadingHTTPServer):
    """The server a handler answers for: it knows the store's directory."""

    models_dir: Path
    # Connections of expelled members: each request on them is answered 403.
    refused: set[object]


class WeightsHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "skulk-weights"

    def do_GET(self) -> None:
        self._answer(send_body=True)

    def do_HEAD(self) -> None:
        self._answer(send_body=False)

    def log_message(self, format: str, *args: object) -> None:
        logger.debug("weights {}: {}", self.client_address[0], format % args)

    def _answer(self, *, send_body: bool) -> None:
        assert isinstance(self.server, StoreServer)
        models_dir = self.server.models_dir
        if self.request in self.server.refused:
            self.close_connection = True
            self._send_bytes(b"this node was expelled from the cluster\n", "text/plain",
                             send_body, HTTPStatus.FORBIDDEN)
            return
        path = self.path.split("?", 1)[0]
        manifest = served_manifest(models_dir, path)
        if manifest is not None:
            self._send_bytes(manifest.model_dump_json().encode(), "application/json",
                             send_body)
            return
        file = served_file(models_dir, path)
        if file is None:
            self._send_bytes(b"not a file of a stored model\n", "text/plain", send_body,
                             HTTPStatus.NOT_FOUND)
            return
        try:
            byte_range = parse_range(self.headers.get("Range"), file.size_bytes)
        except RangeNotSatisfiable as error:
            self.send_response(HTTPStatus.REQUESTED_RANGE_NOT_SATISFIABLE)
            self.send_header("Content-Range", f"bytes */{file.size_bytes}")
            self._send_bytes(f"{error}\n".encode(), "text/plain", send_body, status=None)
            return
        self._send_file(file, byte_range, send_body)

    def _send_bytes(self, body: bytes, content_type: str, send_body: bool,
                    status: HTTPStatus | None = HTTPStatus.OK) -> None:
        if status is not None:
            self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if send_body:
            self.wfile.write(body)

    def _send_file(self, file: ServedFile, byte_range: ByteRange, send_body: bool) -> None:
        self.send_response(HTTPStatus.PARTIAL_CONTENT if byte_range.partial else HTTPStatus.OK)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Accept-Ranges", "bytes")
        self.send_header("ETag", f'"{file.sha256}"')
        self.send_header("Content-Length", str(max(byte_range.length, 0)))
        if byte_range.partial:
            self.send_header("Content-Range", byte_range.content_range)
        self.end_headers()
        if not send_body or byte_range.length <= 0:
            return
        with file.path.open("rb") as handle:
            handle.seek(byte_range.start)
            remaining = byte_range.length
            while remaining > 0:
                chunk = handle.read(min(CHUNK_BYTES, remaining))
                if not chunk:
                    raise OSError(f"{file.path} shrank while it was being sent")
                self.wfile.write(chunk)
                remaining -= len(chunk)
