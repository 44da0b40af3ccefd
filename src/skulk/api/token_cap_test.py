from skulk.api.token_cap import capped
from skulk.shared.types.ids import ModelId
from skulk.shared.types.tasks import ChatMessage, GenerationParams


def params(max_tokens: int | None) -> GenerationParams:
    return GenerationParams(model_id=ModelId("m"), max_tokens=max_tokens,
                            messages=[ChatMessage(role="user", content="hi")])


def test_the_cap_bounds_large_and_unset_limits_and_keeps_smaller_ones() -> None:
    assert capped(params(5000), 64).max_tokens == 64
    assert capped(params(None), 64).max_tokens == 64  # unset: up to the context
    assert capped(params(10), 64).max_tokens == 10
    assert capped(params(0), 64).max_tokens == 0
    assert capped(params(None), None).max_tokens is None  # no cap: as asked
    assert capped(params(5000), None).max_tokens == 5000
