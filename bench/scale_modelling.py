"""What the one-process harness changes so that N nodes on one core behave as N nodes on
their own cores would, and no more: the harness's modelling, not the product's.

- **The election timeout.** A round of the bully election delivers every member's vote to
  every other member: N(N-1) signature checks, each on its receiver's core. Here one core
  does them all (39,800 at 200 nodes: ~6 s quiet, more loaded) while the product's timeout
  is 1 s, so a round ends before its votes were read and rounds pile up; a node on its own
  core checks its N-1 votes in ~30 ms at 200. The nodes here wait the product's timeout
  plus what this core takes to open a round's votes (`harness_election_timeout`, from a
  check timed at the start of each size), so a round here decides on the votes it would
  have had. The own-cores model (bench/scale.py) still charges each round the product's
  timeout.
- **The collector.** The one process holds every node's heap, so each full collection
  walks N nodes' objects (1.4-1.7 s pauses at 200, every node frozen at once, longer than
  the election timeout and a follower's first resend). Once a cluster has formed, what it
  built is moved out of the collector's reach with `gc.freeze()` (a node on its machine
  walks its own heap only), and again every `FREEZE_EVERY_SECONDS` while it runs (what
  lives that long is kept out of later walks: with one freeze before each load the longest
  pause at 200 was still 0.7 s, the allocations of the idle phase and the loads); all is let
  back with `gc.unfreeze()` and collected when the size is done, so the next size's
  collections do not walk the last one's leftovers either. Cycles that became garbage
  after a freeze wait until then: memory, not time.
"""

import gc
import time

import anyio
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from skulk.node_identity import node_id_for
from skulk.shared.types.election import ElectionMessage
from skulk.shared.types.wire import from_msgpack, to_msgpack
from skulk.trust.envelope import MessageSigner, MessageVerifier

# Room for what else a vote costs on the way (the bus, the router, the election's own
# handling) and for other work on the core meanwhile.
VOTE_MARGIN = 2.0
_TIMED_VOTES = 200
FREEZE_EVERY_SECONDS = 1.0


def seconds_to_open_a_vote() -> float:
    """Wall seconds this process takes to verify and decode one sealed vote (the median
    of a few timings of `_TIMED_VOTES` each, so a loaded core reads slower)."""
    key = ElectionMessage.__name__
    private = Ed25519PrivateKey.generate()
    node = node_id_for(private)
    signer = MessageSigner(node, private, private.public_key().public_bytes_raw())
    sealed = signer.seal(key, to_msgpack(ElectionMessage(
        node_id=node, clock=7, seniority=0, commands_seen=100)))
    verifier = MessageVerifier(None)
    timings = []
    for _ in range(5):
        started = time.perf_counter()
        for _ in range(_TIMED_VOTES):
            _, payload = verifier.open(key, sealed)
            from_msgpack(ElectionMessage, payload)
        timings.append((time.perf_counter() - started) / _TIMED_VOTES)
    return sorted(timings)[len(timings) // 2]


def harness_election_timeout(nodes: int, product_timeout: float, vote_seconds: float) -> float:
    """The election timeout the harness's nodes run with: the product's, plus the time
    this one core takes to open a round's N(N-1) votes, with margin."""
    return product_timeout + VOTE_MARGIN * nodes * (nodes - 1) * vote_seconds


def freeze_formed_cluster() -> None:
    """Collect once, then keep every object alive now out of later collections."""
    gc.collect()
    gc.freeze()


def release_frozen() -> None:
    """Let the collector reach what `freeze_formed_cluster` froze, and collect it."""
    gc.unfreeze()
    gc.collect()


async def keep_frozen(every: float = FREEZE_EVERY_SECONDS) -> None:
    """Freeze what lives, every `every` seconds, until cancelled (no collection: a freeze
    only moves the collector's lists)."""
    while True:
        await anyio.sleep(every)
        gc.freeze()
