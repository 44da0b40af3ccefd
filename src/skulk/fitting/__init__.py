"""What fits where: the engines as placement sees them (`engines.py`: formats, shardings,
memory per byte of weights and of KV, batch sizes, preference order), what a shard needs
of a node's memory (`memory.py`) and of its GPUs (`offload.py`). The master places by it
and the worker re-checks a shard by it before it starts, so it imports neither of them,
nor any engine's code."""
