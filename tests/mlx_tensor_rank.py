"""One rank of a tensor-split model, for test_mlx_tensor_fidelity: join the ring over
127.0.0.1, load this rank's share of every layer, run one teacher-forced forward over the
given tokens and, on the deciding rank, save the logits.

    python -m tests.mlx_tensor_rank RANK HOSTS_JSON MODEL_DIR TOKENS.npy OUT.npy
"""

import json
import sys
from pathlib import Path

import mlx.core as mx
import numpy as np

from skulk.worker.engines.mlx.collectives import connect_ring
from skulk.worker.engines.mlx.shard_loader import load_shard, read_config

CONNECT_SECONDS = 60.0


def main(rank: int, hosts: list[str], model_dir: Path, tokens_path: Path,
         out_path: Path) -> None:
    group = connect_ring(rank, hosts, CONNECT_SECONDS)
    layers = int(read_config(model_dir)["num_hidden_layers"])
    shard = load_shard(model_dir, group, 0, layers, "tensor")
    tokens = mx.array(np.load(tokens_path).astype(np.int32))[None]
    logits = shard.forward(tokens, shard.make_cache([0]))
    if logits is not None:
        mx.eval(logits)
        np.save(out_path, np.array(logits[0]))
    group.barrier()  # nobody leaves the ring while another rank still needs it


if __name__ == "__main__":
    main(int(sys.argv[1]), json.loads(sys.argv[2]), Path(sys.argv[3]), Path(sys.argv[4]),
         Path(sys.argv[5]))
