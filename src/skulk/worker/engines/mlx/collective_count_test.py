"""How many collectives a decode step makes: each is a round trip between machines and a
sync of every rank, so a settled batch's step makes two (the control agreement and the
tokens) and the replies' all_sum comes only with proposals. And who waits in poll(2)
for the tokens (collectives.await_peer): every rank but the deciding one, which would
wait for a send that comes only after its own."""

from pathlib import Path
from typing import Any

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
        self.awaits = 0

    def all_sum(self, x: mx.array) -> mx.array:
        self.all_sums += 1
        return super().all_sum(x)

    def await_peer(self) -> None:
        self.awaits += 1


class FollowingShard(WholeModelShard):
    """A rank that does not decide: it fills its cache and adds zeros to the tokens."""

    @property
    def decides(self) -> bool:
        return False

    def forward(self, tokens: mx.array, cache: list[Any]) -> mx.array | None:
        super().forward(tokens, cache)
        return None


def run_one_request(tiny_model_dir: Path, shard_class: type[WholeModelShard]
                    ) -> tuple[CountingGroup, list[tuple[int, bool]]]:
    """Steps one request to its end; per step, the all_sums made and whether it joined."""
    tokenizer = mlx_api.load_tokenizer(tiny_model_dir)
    group = CountingGroup()
    shard = shard_class(mlx_api.load_model(tiny_model_dir), group)

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
    return group, per_step


def test_a_settled_decode_step_makes_two_collectives(tiny_model_dir: Path) -> None:
    group, per_step = run_one_request(tiny_model_dir, WholeModelShard)
    joined_step, *decode_steps = per_step
    assert joined_step == (3, True)  # control, the replies to its proposal, the tokens
    assert decode_steps and all(count == 2 for count, _ in decode_steps[:-1])
    assert decode_steps[-1][0] == 1  # the leave: control only, nothing left to decode
    assert group.awaits == 0  # the deciding rank never waits to be sent its own tokens


def test_a_following_rank_awaits_the_deciders_tokens_once_per_decode_step(
        tiny_model_dir: Path) -> None:
    group, per_step = run_one_request(tiny_model_dir, FollowingShard)
    assert group.awaits == sum(1 for count, _ in per_step if count >= 2) == 6
