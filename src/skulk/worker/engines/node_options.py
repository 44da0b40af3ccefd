"""Engine options an operator sets for every runner of one node (`--engine-option
ENGINE.NAME=VALUE`), parsed once into each engine's options model when the node starts,
so that a typo stops `skulk run` with a message instead of failing each runner later.

Options the master stamps on an instance (how it is split, where its ranks listen) and
`batching` (every rank of a split instance must run the same batch shape: `--no-batching`
is its flag) are not the node's to set.
"""

from collections.abc import Iterable
from dataclasses import dataclass

from skulk.worker.engines.options import EngineOptionError, EngineOptions
from skulk.worker.engines.registry import ENGINES, engine_description

NodeEngineOptions = dict[str, EngineOptions]
"""Engine name -> the options this node set for it, typed (only those set count as set:
`EngineOptions.given`)."""

NOT_PER_NODE = frozenset({"sharding", "ring_hosts", "batching", "weights_sha256"})


def parse_node_engine_options(entries: Iterable[str]) -> NodeEngineOptions:
    """`mlx.draft_adaptive=off`-style entries, by engine, each engine's parsed once; a
    ValueError names what is wrong with the first bad one and what would be right."""
    raw: dict[str, dict[str, str]] = {}
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
        raw.setdefault(engine_name, {})[name] = value
    return {name: engine_description(name).options.parse(values)
            for name, values in raw.items()}


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
        typed = {name: options.get(name) or engine.options() for name, engine in ENGINES.items()}
        return cls(batch_sizes={name: max(o.batch_size(), 1) for name, o in typed.items()},
                   kv_contexts={name: o.kv_contexts() for name, o in typed.items()},
                   batching=batching)
