"""The ranks of a split instance check, once their ring is up, that they hold the same
weights: each puts the digest of its files (`weights_sha256`, from the worker) in its row
of a fixed-shape matrix, one all_sum gathers them, and every rank reaches the same verdict
from the same rows. A split model whose ranks load different files would run and answer
nonsense; this refuses it at load with the digests side by side."""

import mlx.core as mx
import numpy as np

from skulk.worker.engines.mlx.collectives import Group
from skulk.worker.engines.protocol import InvalidRequest

DIGEST_BYTES = 32


class RanksDisagree(InvalidRequest):
    """The ranks hold different weights; the message names each rank's digest."""


def _row(weights_sha256: str | None) -> np.ndarray:
    """[known, the digest's 32 bytes]; unknown (a directory no manifest describes): zeros."""
    row = np.zeros(DIGEST_BYTES + 1, dtype=np.int32)
    if weights_sha256 is not None:
        row[0] = 1
        row[1:] = np.frombuffer(bytes.fromhex(weights_sha256), dtype=np.uint8)
    return row


def check_ranks_agree(group: Group, weights_sha256: str | None) -> None:
    """Raise `RanksDisagree` on every rank when two ranks that know their digests differ.
    A rank that cannot tell (no digest) is not held against the others."""
    rows = np.zeros((group.size, DIGEST_BYTES + 1), dtype=np.int32)
    rows[group.rank] = _row(weights_sha256)
    gathered = np.array(group.all_sum(mx.array(rows)))
    known = {rank: bytes(row[1:].astype(np.uint8)).hex()
             for rank, row in enumerate(gathered) if row[0] == 1}
    if len(set(known.values())) > 1:
        listed = ", ".join(f"rank {rank} {digest[:12]}" for rank, digest in sorted(known.items()))
        raise RanksDisagree(f"the ranks of this instance hold different weights ({listed}); "
                            "remove the odd copy (`skulk models remove`) or put the same "
                            "files on every node")
