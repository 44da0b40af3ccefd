"""A 3-way tensor split of the real SmolLM2 scores like one process.

All-reduce sums the heads' partial results in a different order than one process does, so
byte-identity is not required: the split's logits must stay within float tolerance of one
process's, and teacher-forced greedy choices (the argmax at every position of a prompt and
the one-process greedy reply) must agree at 98% of positions or more. Three real rank
processes join an mlx.distributed ring over 127.0.0.1; bounded by a deadline.
"""

import json
import subprocess
import sys
from pathlib import Path
from typing import cast

import mlx.core as mx
import numpy as np
import pytest

from skulk.testing.ports import free_port
from skulk.worker.engines.mlx import mlx_api
from skulk.worker.engines.mlx.shard import WholeModelShard
from tests.test_mlx_engine import smollm2_dir

pytestmark = pytest.mark.integration

RANKS = 3
REPLY_TOKENS = 48
SECONDS = 300
PROMPT = ("<|im_start|>user\nExplain in a few sentences why the sky is blue, and what a "
          "sunset has to do with it.<|im_end|>\n<|im_start|>assistant\n")


def greedy_reply(shard: WholeModelShard, prompt: list[int], count: int) -> list[int]:
    cache = shard.make_cache([0])
    logits = shard.forward(mx.array([prompt]), cache)
    reply: list[int] = []
    while len(reply) < count:
        assert logits is not None
        reply.append(int(cast(int, mx.argmax(logits[0, -1]).item())))
        logits = shard.forward(mx.array([[reply[-1]]]), cache)
    return reply


def test_three_way_tensor_split_scores_like_one_process(tmp_path: Path,
                                                         mlx_models: Path) -> None:
    model_dir = smollm2_dir(mlx_models)
    whole = WholeModelShard(mlx_api.load_model(model_dir))
    tokenizer = mlx_api.load_tokenizer(model_dir)
    prompt = tokenizer.encode(PROMPT, add_special_tokens=False)
    tokens = prompt + greedy_reply(whole, prompt, REPLY_TOKENS)
    expected = whole.forward(mx.array([tokens]), whole.make_cache([0]))
    assert expected is not None
    expected_logits = np.array(expected[0])

    np.save(tmp_path / "tokens.npy", np.array(tokens, dtype=np.int32))
    hosts = [f"127.0.0.1:{free_port()}" for _ in range(RANKS)]
    out = tmp_path / "logits.npy"
    ranks = [subprocess.Popen([sys.executable, "-m", "tests.mlx_tensor_rank", str(rank),
                               json.dumps(hosts), str(model_dir), str(tmp_path / "tokens.npy"),
                               str(out)]) for rank in range(RANKS)]
    try:
        codes = [rank.wait(SECONDS) for rank in ranks]
    finally:
        for rank in ranks:
            rank.kill()
    assert codes == [0] * RANKS
    split_logits = np.load(out)

    assert split_logits.shape == expected_logits.shape
    scale = float(np.abs(expected_logits).max())
    assert float(np.abs(split_logits - expected_logits).max()) < 1e-3 * scale
    # Teacher-forced greedy: the choice at each position given the same history.
    agree = split_logits.argmax(-1) == expected_logits.argmax(-1)
    assert agree.mean() >= 0.98, f"{agree.mean():.1%} of positions agree"
