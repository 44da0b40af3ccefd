from skulk.api.continuation import Continuation
from skulk.shared.types.chunks import TokenChunk, Usage
from skulk.shared.types.ids import ModelId
from skulk.shared.types.tasks import ChatMessage, GenerationParams

PARAMS = GenerationParams(model_id=ModelId("m"), max_tokens=10, temperature=0.0,
                          messages=[ChatMessage(role="user", content="count")])


def test_a_continuation_is_the_prompt_plus_every_token_sent_with_the_rest_of_the_budget(
        ) -> None:
    going = Continuation(PARAMS)
    going.deliver(TokenChunk(text="one", token_ids=[11]))
    going.deliver(TokenChunk(text=" two three", token_ids=[12, 13]))
    resumed = going.resumed()
    assert isinstance(resumed, GenerationParams)
    assert resumed.continuation == [11, 12, 13] and resumed.max_tokens == 7
    assert resumed.messages == PARAMS.messages  # the prompt itself is unchanged
    # A second failure resumes from everything sent, across both attempts.
    going.deliver(TokenChunk(text=" four", token_ids=[14]))
    again = going.resumed()
    assert isinstance(again, GenerationParams)
    assert again.continuation == [11, 12, 13, 14] and again.max_tokens == 6


def test_the_final_usage_counts_the_resumed_tokens_as_generated() -> None:
    going = Continuation(PARAMS)
    going.deliver(TokenChunk(text="a b", token_ids=[1, 2]))
    going.resumed()
    # The new run saw prompt (5) + 2 resumed tokens and generated 3 more.
    final = going.deliver(TokenChunk(text=" c", token_ids=[3], finish_reason="stop",
                                     usage=Usage(prompt_tokens=7, completion_tokens=3,
                                                 cached_tokens=7)))
    assert final.usage == Usage(prompt_tokens=5, completion_tokens=5, cached_tokens=5)
    assert going.sent == [1, 2, 3]


def test_without_a_budget_limit_it_stays_unlimited_and_a_spent_budget_just_ends() -> None:
    unlimited = Continuation(PARAMS.model_copy(update={"max_tokens": None}))
    unlimited.deliver(TokenChunk(text="x", token_ids=[5]))
    resumed = unlimited.resumed()
    assert isinstance(resumed, GenerationParams) and resumed.max_tokens is None
    spent = Continuation(PARAMS.model_copy(update={"max_tokens": 2}))
    spent.deliver(TokenChunk(text="x y", token_ids=[5, 6]))
    final = spent.resumed()
    assert isinstance(final, TokenChunk) and final.finish_reason == "length"
    assert final.text == "" and final.token_ids == []  # nothing repeated


def test_json_output_goes_on_after_the_client_has_part_of_it() -> None:
    constrained = Continuation(PARAMS.model_copy(update={"output": "json"}))
    constrained.deliver(TokenChunk(text="{", token_ids=[7]))
    resumed = constrained.resumed()
    # The engines' matchers consume the continuation before the grammar goes on.
    assert isinstance(resumed, GenerationParams) and resumed.output == "json"
    assert resumed.continuation == [7]
