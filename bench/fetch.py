"""Weights from a peer: `fetch_from_peer` vs `curl` on the same URL, same client
certificate, same link (loopback), one after the other against one `WeightServer`.

A file of `--size-mb` random bytes is put in a store and served over mutual TLS by a
server in a process of its own (as a peer's would be: it does not share the client's
GIL). Each
repeat downloads it (a) with Skulk's client, which also checks its sha256 before keeping
it, and (b) with `curl` presenting the same node certificate, then (c) curl's bytes hashed
with the same sha256 routine, so the comparison that matters (a vs b+c) does the same
work. Medians of the repeats, MB/s (10^6 bytes).

    .venv/bin/python bench/fetch.py [--size-mb 300] [--repeats 3]
"""

import argparse
import hashlib
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from skulk.models.peers.client import fetch_from_peer  # noqa: E402
from skulk.models.peers.server import WeightServer  # noqa: E402
from skulk.models.store.hashing import file_sha256  # noqa: E402
from skulk.models.store.manifest import StoredFile, StoreEntry, write_entry  # noqa: E402
from skulk.node_identity import load_or_create_identity  # noqa: E402
from skulk.shared.types.ids import ModelId  # noqa: E402
from skulk.testing.cluster_trust import make_member  # noqa: E402
from skulk.trust.files import TrustFiles  # noqa: E402

ENTRY_DIR = "bench-gguf"
FILE_NAME = "weights.gguf"


def make_store(models_dir: Path, size: int) -> StoredFile:
    """A store entry holding one file of `size` random bytes, hashed as it is written."""
    (models_dir / ENTRY_DIR).mkdir(parents=True)
    digest = hashlib.sha256()
    with (models_dir / ENTRY_DIR / FILE_NAME).open("wb") as out:
        left = size
        while left:
            block = os.urandom(min(left, 8 << 20))
            digest.update(block)
            out.write(block)
            left -= len(block)
    file = StoredFile(name=FILE_NAME, size_bytes=size, sha256=digest.hexdigest())
    write_entry(models_dir / ENTRY_DIR, StoreEntry(
        directory=ENTRY_DIR, model_id=ModelId("bench"), format="gguf", files=[file]))
    return file


def timed(action: Callable[[], object]) -> float:
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def serve(models_dir: Path, data_dir: Path) -> int:
    """The serving peer: prints its port, serves until its stdin closes."""
    with WeightServer(models_dir, tls=TrustFiles(data_dir).tls_files(),
                      host="127.0.0.1") as server:
        print(server.port, flush=True)
        sys.stdin.read()
    return 0


@contextmanager
def serving_process(models_dir: Path, data_dir: Path) -> Iterator[int]:
    server = subprocess.Popen([sys.executable, __file__, "--serve", str(models_dir),
                               str(data_dir)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, text=True)
    try:
        assert server.stdout is not None and server.stdin is not None
        yield int(server.stdout.readline())
    finally:
        if server.stdin is not None:
            server.stdin.close()
        server.wait(timeout=30)


def main() -> int:
    if sys.argv[1:2] == ["--serve"]:
        return serve(Path(sys.argv[2]), Path(sys.argv[3]))
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size-mb", type=int, default=300)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    if shutil.which("curl") is None:
        print("curl is not installed", file=sys.stderr)
        return 1
    size: int = args.size_mb * 1_000_000
    with tempfile.TemporaryDirectory(prefix="skulk-bench-fetch-") as scratch:
        root = Path(scratch)
        anyio.run(make_member, root / "authority", root / "server")
        anyio.run(make_member, root / "authority", root / "client")
        client_tls = TrustFiles(root / "client").tls_files()
        server_node = load_or_create_identity(root / "server").node_id
        file = make_store(root / "server" / "models", size)
        target = root / "client" / "fetched"
        skulk_times: list[float] = []
        curl_times: list[float] = []
        hash_times: list[float] = []
        with serving_process(root / "server" / "models", root / "server") as port:
            url_base = f"https://127.0.0.1:{port}"
            curl = ["curl", "--silent", "--show-error", "--fail", "--tlsv1.3",
                    "--cacert", str(client_tls.ca_certificate),
                    "--cert", str(client_tls.certificate), "--key", str(client_tls.private_key),
                    "--resolve", f"{server_node}:{port}:127.0.0.1",
                    f"https://{server_node}:{port}/weights/{ENTRY_DIR}/{FILE_NAME}",
                    "--output", str(target / "curl.bin")]
            for _ in range(args.repeats):
                shutil.rmtree(target, ignore_errors=True)
                target.mkdir(parents=True)
                skulk_times.append(timed(lambda: fetch_from_peer(
                    url_base, client_tls, ENTRY_DIR, file, target, lambda n: None,
                    peer_node=server_node)))
                (target / FILE_NAME).unlink()
                curl_times.append(timed(lambda: subprocess.run(curl, check=True)))
                started = time.perf_counter()
                hashed = file_sha256(target / "curl.bin")
                hash_times.append(time.perf_counter() - started)
                assert hashed == file.sha256, "curl's bytes differ from the served file"
    skulk, curl_only, hashing = (statistics.median(t) for t in
                                 (skulk_times, curl_times, hash_times))

    def rate(seconds: float) -> float:
        return size / seconds / 1e6

    print(f"{args.size_mb} MB over loopback, mutual TLS 1.3, median of {args.repeats}")
    print("| | skulk fetch_from_peer | curl | ratio (skulk / curl throughput) |")
    print("|---|---|---|---|")
    print(f"| download + sha256 verify | {rate(skulk):.0f} MB/s ({skulk:.2f} s) | "
          f"{rate(curl_only + hashing):.0f} MB/s ({curl_only + hashing:.2f} s, curl then "
          f"sha256) | {(curl_only + hashing) / skulk:.2f} |")
    print(f"| download only (skulk still verifies) | {rate(skulk):.0f} MB/s | "
          f"{rate(curl_only):.0f} MB/s | {curl_only / skulk:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
