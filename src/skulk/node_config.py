"""What a node runs and how: ports, peers, roles and behaviour switches (`skulk run`'s
flags)."""

from dataclasses import dataclass, field
from pathlib import Path

from skulk.api.security import ApiSecurity
from skulk.cluster.election import DEFAULT_ELECTION_TIMEOUT_SECONDS
from skulk.master.settings import TOPOLOGY_SETTLE_GRACE_SECONDS
from skulk.shared.partition import Quorum
from skulk.worker.engines.node_options import NodeEngineOptions


@dataclass(frozen=True)
class NodeConfig:
    data_dir: Path
    namespace: str = "skulk"
    api_host: str = "127.0.0.1"
    api_port: int = 52415
    listen: list[str] = field(default_factory=lambda: ["tcp/127.0.0.1:0"])
    peers: list[str] = field(default_factory=list)
    run_api: bool = True
    run_worker: bool = True
    serve: list[str] = field(default_factory=list)
    auto_place: bool = True
    # `--threads` (None: the physical cores, less one when the node serves the API).
    engine_threads: int | None = None
    # `--memory-limit`: at most this much memory for models (None: what the machine has).
    memory_limit_bytes: int | None = None
    batching: bool = True  # runners of whole instances batch concurrent requests
    # `--no-native-stream`: every token through the node's Python (no relay thread).
    native_stream: bool = True
    # `--engine-option ENGINE.NAME=VALUE`: options for every runner of that engine here.
    engine_options: NodeEngineOptions = field(default_factory=dict)
    stream_idle_timeout: float = 60.0
    # `--runner-deadline`: a runner must report this soon after starting, and load and
    # warm up within this plus the time its weights take at 20 MB/s (None: 60 s / 120 s).
    runner_deadline_seconds: float | None = None
    # Admission: `--max-queue` requests queued per instance (None: 16 per slot of its
    # batch), refused 429 beyond; `--queue-timeout`: a request queued this long is 503.
    max_queue: int | None = None
    # `--max-tokens`: the most tokens one request generates (None: up to the context).
    max_tokens: int | None = None
    # `--keep-alive`: an instance idle this long is removed (not one placed by --serve).
    keep_alive_seconds: float = 600.0
    queue_timeout_seconds: float = 300.0
    discover: bool = False
    force_master: bool = False
    election_timeout: float = DEFAULT_ELECTION_TIMEOUT_SECONDS
    settle_grace_seconds: float = TOPOLOGY_SETTLE_GRACE_SECONDS
    security: ApiSecurity = field(default_factory=ApiSecurity)
    # Trust: plain TCP and unchecked members (labs and tests), a join token, and the port
    # a node holding the cluster's CA admits new members on (None: the first listen
    # endpoint's port + 1, or any free port when that one is 0).
    insecure: bool = False
    # "majority": a side of a partition without a majority of the agreed members indexes
    # nothing; "available": it serves what it holds and accepts changes, which its master
    # carries over to the majority's when the partition heals.
    quorum: Quorum = "available"
    join: str | None = None
    admit_port: int | None = None
