"""Telemetry: node readings gossiped last-writer-wins, never event-sourced."""

from typing import Annotated, Literal

from pydantic import Field

from skulk.shared.types.base import WireModel
from skulk.shared.types.ids import InstanceId, ModelId, NodeId
from skulk.shared.types.model_cards import ModelFormat


class WarmModel(WireModel):
    """A model this node holds loaded and ready, and how fast it has been serving."""

    model_id: ModelId = Field(description="The model.")
    instance_id: InstanceId = Field(description="The instance it belongs to.")
    role: str = Field(description="`whole`, or `rank R of N` for a shard of a split model.")
    tokens_per_second: float | None = Field(
        default=None, description="Decode speed measured on its last request, if any.")


class ReachableAddress(WireModel):
    """One address of a peer that answered this node's probe."""

    address: str = Field(description="The peer's IP address (IPv4 or IPv6, no port).")
    rtt_ms: float = Field(description="TCP connect round-trip time, in milliseconds.")


class PeerReachability(WireModel):
    """An observed edge: how this node reached one peer in its latest probe round."""

    node_id: NodeId = Field(description="The peer that answered.")
    addresses: list[ReachableAddress] = Field(
        description="Addresses of the peer that answered, best first (same subnet and "
                    "lower round-trip first; loopback only for a peer on the same host).")
    observed_at: float = Field(description="Unix time of the probe round that saw them.")
    ttl_seconds: float = Field(
        description="How long the observation stays valid unless a newer round confirms it.")


class Reachability(WireModel):
    """Where a node can be reached, and which peers it has reached itself."""

    addresses: list[str] = Field(
        default_factory=list,
        description="The node's IP addresses: its interfaces' and loopback, no ports.")
    listen_ports: list[int] = Field(
        default_factory=list,
        description="TCP ports the node listens on (cluster transport, API), as bound; "
                    "peers probe every address on each of them.")
    peers: list[PeerReachability] = Field(
        default_factory=list, description="Peers this node reached in its latest probe round.")


class HeldFile(WireModel):
    """One verified file of a model in a node's store (mirrors the store manifest's
    `StoredFile`: shared types do not reach into the store package)."""

    name: str = Field(max_length=1024, description="Path inside the model's store directory.")
    size_bytes: int = Field(ge=0, description="Size on disk.")
    sha256: str = Field(min_length=64, max_length=64, description="sha256 of the bytes, hex.")


class HeldModel(WireModel):
    """A complete model, or a pipeline stage's complete copy of one, in a node's store,
    which the node serves to its peers."""

    model_id: ModelId = Field(description="The model these weights are.")
    format: ModelFormat = Field(description="The weights' format.")
    directory: str = Field(max_length=255, description="The model's directory in the store.")
    files: list[HeldFile] = Field(max_length=4096, description="Every file, verified.")
    layers: tuple[int, int] | None = Field(
        default=None, description="A stage's copy: the layers [start, end) its files serve "
        "(with every tensor outside the layers). None: the whole model.")


class StorePull(WireModel):
    """A `skulk models pull` under way into a node's store (another process's: the node
    reads its progress record), so every dashboard can watch it."""

    model_id: ModelId = Field(description="The model being pulled.")
    repo: str = Field(max_length=256, description="The hub repository it comes from.")
    done_bytes: int = Field(ge=0, description="Bytes fetched so far.")
    total_bytes: int = Field(ge=0, description="Bytes in all.")
    updated_at: float = Field(description="Unix time of the pull's last progress; an old "
                              "one means the pull stopped (run it again to resume).")


GpuBackend = Literal["cuda", "metal", "vulkan"]


class WidthReadRate(WireModel):
    """How fast one-row matrix products read weights of one residual width."""

    width: int = Field(ge=1, description="The residual width of the matrices read.")
    bytes_per_second: float = Field(gt=0, description="Weights' bytes read per second.")


class DecodeCalibration(WireModel):
    """A node's decode constants, measured once with its MLX runner's kernels
    (`skulk.fitting.decode_probe`): placement predicts a step's time from them."""

    read_rates: list[WidthReadRate] = Field(
        min_length=1, max_length=16, description="How fast one-row matrix products read "
        "weights, at a few residual widths (the rate differs between widths).")
    layer_seconds: float = Field(
        ge=0, le=1, description="What one layer of a decode step costs beyond reading its "
        "weights (kernel launches, Python per layer), in seconds.")

    def rates(self) -> dict[int, float]:
        """The read rates by width."""
        return {rate.width: rate.bytes_per_second for rate in self.read_rates}


class GpuDevice(WireModel):
    """One GPU of a node, as the driver reported it at the reading's moment."""

    name: str = Field(max_length=256, description="The device's name, e.g. `NVIDIA RTX 4090`.")
    backend: GpuBackend = Field(
        description="The API it was found through, which is the llama.cpp backend that can "
        "use it. `metal` is Apple silicon's GPU, whose memory is the system's own.")
    vram_total_bytes: int = Field(
        ge=0, description="Its memory. For `metal`: the share of system memory the GPU may "
        "wire (an estimate of Metal's recommended working set). 0: not known.")
    vram_free_bytes: int = Field(ge=0, description="Of that, free now. 0: not known.")


class NodeEndpoints(WireModel):
    """Where a node listens, as bound: what a person types to reach it."""

    cluster: list[str] = Field(
        default_factory=list, max_length=64,
        description="The cluster transport's endpoints in `--peer` form, e.g. "
        "`tcp/192.168.1.10:7447` (a wildcard address shown as each interface's).")
    api: str | None = Field(
        default=None, max_length=512,
        description="The HTTP API's URL (`http://127.0.0.1:52415` answers on its own "
        "machine only). None: the node serves no API.")


class PeerLink(WireModel):
    """One `--peer` endpoint as the node last found it."""

    endpoint: str = Field(max_length=512, description="The endpoint, e.g. `tcp/10.0.0.2:7447`.")
    reachable: bool = Field(description="A TCP connection to it opened in the latest probe.")
    member: bool = Field(description="A live member of the cluster listens there.")
    problem: str | None = Field(
        default=None, max_length=512,
        description="What is wrong with it, e.g. `connection refused`; None when fine.")


class ClusterLinks(WireModel):
    """Whether a node sees the cluster it belongs to, and how its `--peer` endpoints fare."""

    isolated: bool = Field(
        default=False,
        description="The node belongs to a larger cluster (it joined one, its agreed "
        "membership names others, or it was given `--peer`) but sees no other member.")
    reason: str | None = Field(
        default=None, max_length=2048, description="Why it counts as isolated, in words.")
    peers: list[PeerLink] = Field(
        default_factory=list, max_length=64, description="Each `--peer` endpoint it was given.")


class NodeTelemetry(WireModel):
    """One node's readings at one moment."""

    node_id: NodeId = Field(description="Node the readings are from.")
    stamp: float = Field(description="Unix time the readings were taken.")
    memory_total_bytes: int = Field(description="Physical memory.")
    memory_available_bytes: int = Field(description="Memory available to new work.")
    cpu_count: int = Field(description="Logical CPUs.")
    backends: list[str] = Field(description="Engine tags, e.g. `llama_cpp-cpu`.")
    has_worker: bool = Field(description="Whether the node runs models.")
    api_url: str | None = Field(default=None, description="The node's HTTP API, if it serves one.")
    hostname: str = Field(
        default="", max_length=255,
        description="The machine's host name, so people can tell nodes apart by more than "
                    "their ids (empty from nodes that predate it).")
    disk_total_bytes: int = Field(default=0, description="Size of the data dir's volume.")
    disk_free_bytes: int = Field(default=0, description="Free space on that volume.")
    warm: list[WarmModel] = Field(
        default_factory=list, description="Capability card: models loaded and serving here.")
    drafters: list[str] = Field(
        default_factory=list, description="Capability card: drafters this node serves to "
        "other nodes' runners for speculative decoding (e.g. `ngram`).")
    card_ttl_seconds: float = Field(
        default=30.0, description="How long these readings stay valid without a refresh.")
    reachability: Reachability = Field(
        default_factory=Reachability,
        description="Addresses and ports peers can probe, and the edges this node observed.")
    held_models: list[HeldModel] = Field(
        default_factory=list, max_length=1024,
        description="Models complete in this node's store, with their files' sha256.")
    pulls: list[StorePull] = Field(
        default_factory=list, max_length=64,
        description="Pulls into this node's store under way (or stopped midway).")
    gpus: list[GpuDevice] = Field(
        default_factory=list, max_length=16,
        description="The node's GPUs (none on a CPU-only node), with their free memory.")
    batch_sizes: dict[str, Annotated[int, Field(ge=1, le=1024)]] = Field(
        default_factory=dict, max_length=16,
        description="Requests this node's runners of each engine decode at once (its "
        "`--engine-option ENGINE.max_batch`); the master bounds each instance's queue by "
        "its rank 0's. Empty from nodes that predate it: the engines' defaults then.")
    memory_read_bytes_per_second: float | None = Field(
        default=None, ge=0, description="How fast one core of this node reads memory, "
        "measured once when the node starts: placement predicts a decode step's time from "
        "it (`skulk place --prefer speed`). None from nodes that predate it.")
    decode_calibration: DecodeCalibration | None = Field(
        default=None, description="This node's MLX decode constants, measured in a runner's "
        "environment soon after the node starts: placement's predictions read them before "
        "the memory rate. None until measured, on nodes without MLX, and from nodes that "
        "predate it.")
    batching: bool = Field(
        default=True, description="False under `--no-batching`: instances wholly on this "
        "node serve one request at a time.")
    kv_contexts: dict[str, Annotated[int, Field(ge=1, le=1024)]] = Field(
        default_factory=dict, max_length=16,
        description="Whole contexts of KV cells this node's batching runners of each engine "
        "hold: 1 when their sequences share one context's cells, the batch size when each "
        "has its own (`--engine-option llama_cpp.shared_kv=off`). Placement reserves that "
        "much KV memory here. Empty from nodes that predate it: 1.")
    weights_port: int | None = Field(
        default=None, description="TCP port this node serves its stored weights on to "
        "members (TLS with the cluster's certificates, plain HTTP on insecure clusters).")
    endpoints: NodeEndpoints = Field(
        default_factory=NodeEndpoints,
        description="The node's cluster endpoints and API URL as bound (empty from nodes "
        "that predate it).")
    links: ClusterLinks = Field(
        default_factory=ClusterLinks,
        description="Whether the node sees its cluster, and its `--peer` endpoints' state.")
    stopping: bool = Field(
        default=False, description="The node is leaving on purpose (`skulk stop`, SIGTERM): "
        "its last reading, so the others show it stopped rather than lost.")
