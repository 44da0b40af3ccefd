"""One request as every rank holds it: its prompt tokens, limits, sampler, or why it is
refused. Built the same way on every rank from the same task, so the ranks agree on it."""

import time
from dataclasses import dataclass, field

from skulk.shared.types.chunks import ErrorKind
from skulk.shared.types.ids import TaskId
from skulk.shared.types.tasks import GenerationParams
from skulk.worker.engines.grammar.compile import GrammarRefused, grammar_for
from skulk.worker.engines.mlx.membership import TaskKey, task_key
from skulk.worker.engines.mlx.mlx_api import Tokenizer
from skulk.worker.engines.mlx.options import DEFAULT_MAX_DRAFT
from skulk.worker.engines.mlx.sampling import RowSampler
from skulk.worker.engines.protocol import ContextOverflow, InvalidRequest


@dataclass(frozen=True)
class Refusal:
    """Why a request cannot run; rank 0 sends it to the user as an error chunk."""

    kind: ErrorKind
    message: str


@dataclass(frozen=True)
class SpeculationChoice:
    """Which drafter proposes tokens for a request, and at most how many per round."""

    drafter: str | None = None  # None: decode without drafting
    max_draft: int = 0


NO_SPECULATION = SpeculationChoice()


def speculation_choice(params: GenerationParams,
                       default: SpeculationChoice) -> SpeculationChoice:
    """The request's own choice, or the instance's default when it made none."""
    asked = params.speculative
    if asked is None:
        # Drafting keeps the distribution of sampled output but not the tokens a seed
        # gives, so a seeded request drafts only when it asks to.
        seeded = params.temperature > 0.0 and params.seed is not None
        return NO_SPECULATION if seeded else default
    if asked.drafter == "none":
        return NO_SPECULATION
    return SpeculationChoice(asked.drafter, asked.max_draft or default.max_draft
                             or DEFAULT_MAX_DRAFT)


@dataclass
class Request:
    """A request on one rank; `cancel_asked` is this rank's wish, agreed at the next step."""

    task_id: TaskId
    params: GenerationParams
    prompt: list[int]
    max_tokens: int
    sampler: RowSampler
    refusal: Refusal | None = None
    grammar: str | None = None  # the llguidance grammar its output follows
    embed: list[list[int]] | None = None  # an embedding request's texts, as tokens
    speculation: SpeculationChoice = NO_SPECULATION
    cancel_asked: bool = False
    arrived: float = field(default_factory=time.monotonic)
    key: TaskKey = field(init=False)

    def __post_init__(self) -> None:
        self.key = task_key(self.task_id)


def prompt_tokens(params: GenerationParams, tokenizer: Tokenizer) -> list[int]:
    """The prompt, then the tokens an interrupted run already generated (a failover)."""
    return _prompt_only(params, tokenizer) + list(params.continuation)


def _prompt_only(params: GenerationParams, tokenizer: Tokenizer) -> list[int]:
    if params.prompt_token_ids is not None:
        return list(params.prompt_token_ids)
    if params.raw_prompt is not None:
        return tokenizer.encode(params.raw_prompt, add_special_tokens=True)
    rendered = tokenizer.render_chat([m.model_dump() for m in params.messages])
    return tokenizer.encode(rendered, add_special_tokens=False)


def build_request(task_id: TaskId, params: GenerationParams, tokenizer: Tokenizer,
                  context_limit: int, vocab_size: int,
                  speculation: SpeculationChoice = NO_SPECULATION) -> Request:
    """The request, or a refused one: refusals are decided with the other ranks."""
    sampler = RowSampler(temperature=params.temperature, top_p=params.top_p,
                         top_k=params.top_k, seed=params.seed)

    def refused(kind: ErrorKind, message: str, prompt: list[int] | None = None) -> Request:
        return Request(task_id, params, prompt or [], 0, sampler, Refusal(kind, message))

    if params.embed is not None:
        return _embedding_request(task_id, params, tokenizer, context_limit, sampler)
    try:
        grammar = grammar_for(params)
    except GrammarRefused as error:
        return refused("invalid_request", str(error))
    prompt = prompt_tokens(params, tokenizer)
    if not prompt:
        return refused("invalid_request", "the prompt is empty")
    if any(t < 0 or t >= vocab_size for t in prompt):
        return refused("invalid_request", f"prompt token ids must be in [0, {vocab_size})")
    if len(prompt) >= context_limit:
        return refused("context_length_exceeded",
                       str(ContextOverflow(len(prompt), context_limit)), prompt)
    if params.max_tokens is not None and params.max_tokens < 1:
        return refused("invalid_request", "max_tokens must be at least 1", prompt)
    room = context_limit - len(prompt)
    max_tokens = room if params.max_tokens is None else min(params.max_tokens, room)
    return Request(task_id, params, prompt, max_tokens, sampler, grammar=grammar,
                   speculation=speculation_choice(params, speculation))


def embed_tokens(texts: list[str], tokenizer: Tokenizer, context_limit: int) -> list[list[int]]:
    """Each text's tokens (an empty text embeds one token 0, as on a whole model); an
    InvalidRequest names a text longer than the context."""
    token_lists = [tokenizer.encode(text, add_special_tokens=True) or [0] for text in texts]
    for index, tokens in enumerate(token_lists):
        if len(tokens) > context_limit:
            raise InvalidRequest(f"input {index} is {len(tokens)} tokens; this model "
                                 f"embeds at most {context_limit}")
    return token_lists


def _embedding_request(task_id: TaskId, params: GenerationParams, tokenizer: Tokenizer,
                       context_limit: int, sampler: RowSampler) -> Request:
    """A split instance's embedding request (split_embeddings.py): its prompt is every
    text's tokens in a row, which the ranks compare as they would a prompt."""
    assert params.embed is not None
    try:
        token_lists = embed_tokens(params.embed, tokenizer, context_limit)
    except InvalidRequest as invalid:
        return Request(task_id, params, [], 0, sampler, Refusal("invalid_request", str(invalid)))
    prompt = [token for tokens in token_lists for token in tokens]
    return Request(task_id, params, prompt, 0, sampler, embed=token_lists)
