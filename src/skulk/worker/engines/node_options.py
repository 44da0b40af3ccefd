"""Engine options an operator sets for every runner of one node (`--engine-option
ENGINE.NAME=VALUE`), checked when the node starts so that a typo stops `skulk run` with a
message instead of failing each runner later.

Options the master stamps on an instance (how it is split, where its ranks listen) and
`batching` (every rank of a split instance must run the same batch shape: `--no-batching`
is its flag) are not the node's to set.
"""

from collections.abc import Iterable
from dataclasses import dataclass

from skulk.worker.engines.description import EngineOptionError
from skulk.worker.engines.registry import ENGINES, engine_description

NodeEngineOptions = dict[str, dict[str, str]]  # engine name -> option name -> raw value

NOT_PER_NODE = frozenset({"sharding", "ring_hosts", "batching", "weights_sha256"})


def parse_node_engine_options(entries: Iterable[str]) -> NodeEngineOptions:
    """`mlx.draft_adaptive=off`-style entries, by engine; a ValueError names what is wrong
    with the first bad one and what would be right."""
    options: NodeEngineOptions = {}
    for entry in entries:
        target, equals, value = entry.partition("=")
        engine_name, dot, name = target.partition(".")
        if not equals or not dot or not engine_name or not name:
            raise ValueError(f"--engine-option {entry!r}: write ENGINE.NAME=VALUE, "
                             "e.g. mlx.draft_adaptive=off")
        engine = engine_description(engine_name)
        if name in NOT_PER_NODE:
            raise ValueError(f"--engine-option {entry!r}: {name} is set per instance, not "
                             "per node" + (" (use --no-batching)" if name == "batching" else ""))
        try:
            engine.options.parse({name: value})
        except EngineOptionError as error:
            raise ValueError(f"--engine-option {entry!r}: {error}") from error
        options.setdefault(engine_name, {})[name] = value
    return options


def batch_size(engine_name: str, raw: dict[str, str] | None = None) -> int:
    """Requests a runner of the engine decodes at once with these options: its
    `max_batch` when it batches (an engine that declares none runs one at a time)."""
    options = engine_description(engine_name).options.parse(raw or {})
    max_batch = getattr(options, "max_batch", 1)
    return max(int(max_batch), 1) if options.batching else 1


def kv_contexts(engine_name: str, raw: dict[str, str] | None = None) -> int:
    """Whole contexts of KV cells a batching runner of the engine holds with these
    options: 1 when its sequences share one context's cells, its batch size when each has
    its own (`llama_cpp.shared_kv=off`)."""
    options = engine_description(engine_name).options.parse(raw or {})
    return 1 if getattr(options, "shared_kv", True) else batch_size(engine_name, raw)


@dataclass(frozen=True)
class EngineLimits:
    """What a node's runners of each engine batch and how much KV they hold, from its
    `--engine-option`s and `--no-batching`, for its readings: the master's admission
    bounds queues by the batch sizes, placement reserves KV by the contexts."""

    batch_sizes: dict[str, int]
    kv_contexts: dict[str, int]
    batching: bool

    @classmethod
    def of(cls, options: NodeEngineOptions, batching: bool) -> "EngineLimits":
        return cls(batch_sizes={name: batch_size(name, options.get(name)) for name in ENGINES},
                   kv_contexts={name: kv_contexts(name, options.get(name)) for name in ENGINES},
                   batching=batching)
