"""The node's `--max-tokens`: no request generates more, whatever its dialect asked."""

from skulk.shared.types.tasks import GenerationParams


def capped(params: GenerationParams, most: int | None) -> GenerationParams:
    """`params` generating at most `most` tokens (None: no cap); an unset limit, which
    means up to the context, becomes `most` too."""
    if most is None or (params.max_tokens is not None and params.max_tokens <= most):
        return params
    return params.model_copy(update={"max_tokens": most})
