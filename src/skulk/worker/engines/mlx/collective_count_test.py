"""How many collectives a decode step makes: each is a round trip between machines and a
sync of every rank, so a settled batch's step makes two (the control agreement and the
tokens) and the replies' all_sum comes only with proposals."""

from pathlib import Path

import mlx.core as mx

from skulk.shared.types.ids import ModelId, TaskId
from skulk.shared.types.tasks import ChatMessage, GenerationParams
from skulk.worker.engines.mlx import mlx_api
from skulk.worker.engines.mlx.collectives import SoloGroup
from skulk.worker.engines.mlx.generation_loop import GenerationLoop
from skulk.worker.engines.mlx.output import StreamedText
from skulk.worker.engines.mlx.prefix_cache import PrefixCache
from skulk.worker.engines.mlx.requests import Request, build_request
from skulk.worker.engines.mlx.shard import WholeModelShard
from skulk.worker.engines.protocol import TaskDone, TaskJoined


class CountingGroup(SoloGroup):
    def __init__(self) -> None:
        super().__init__()
        self.all_sums = 0

    def all_sum(self, x: mx.array) -> mx.array:
        self.all_sums += 1
        return super().all_sum(x)


def test_a_settled_decode_step_makes_two_collectives(tiny_model_dir: Path) -> None:
    tokenizer = mlx_api.load_tokenizer(tiny_model_dir)
    group = CountingGroup()
    shard = WholeModelShard(mlx_api.load_model(tiny_model_dir), group)

    def output(request: Request, reused: int) -> StreamedText:
        return StreamedText(detokenizer=tokenizer.detokenizer(), stops=[],
                            eos_token_ids=frozenset(), max_tokens=request.max_tokens,
                            prompt_tokens=len(request.prompt), cached_tokens=reused)

    loop = GenerationLoop(shard, PrefixCache(0, 4096), output)
    params = GenerationParams(model_id=ModelId("tiny"), max_tokens=6, temperature=0.0,
                              messages=[ChatMessage(role="user", content="Count to ten")])
    loop.submit(build_request(TaskId("t"), params, tokenizer, 512, 10**6))
    per_step: list[tuple[int, bool]] = []
    done = False
    while not done:
        before = group.all_sums
        events = loop.step()
        per_step.append((group.all_sums - before, any(isinstance(e, TaskJoined)
                                                      for e in events)))
        done = any(isinstance(e, TaskDone) for e in events)
    joined_step, *decode_steps = per_step
    assert joined_step == (3, True)  # control, the replies to its proposal, the tokens
    assert decode_steps and all(count == 2 for count, _ in decode_steps[:-1])
    assert decode_steps[-1][0] == 1  # the leave: control only, nothing left to decode
