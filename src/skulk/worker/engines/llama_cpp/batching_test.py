"""Continuous batching with the real model: requests decoded together give what each
gives alone, join and leave without disturbing the others, and survive a short cache."""

import json
from collections import defaultdict
from collections.abc import Iterator

import pytest

from skulk.shared.types.chunks import ErrorChunk, TokenChunk
from skulk.shared.types.ids import ConversationId, ModelId, TaskId
from skulk.shared.types.tasks import ChatMessage, GenerationParams
from skulk.worker.engines.grammar.constraint import Constraint
from skulk.worker.engines.llama_cpp.batch_plan import BatchEntry
from skulk.worker.engines.llama_cpp.description import LlamaCppOptions
from skulk.worker.engines.llama_cpp.engine import LlamaCppEngine
from skulk.worker.engines.llama_cpp.engine_test import THREADS, model_path
from skulk.worker.engines.llama_cpp.step_widths import FIRST_SAMPLES, StepWidths
from skulk.worker.engines.protocol import EngineConfig, TaskDone, TaskJoined, TaskOutput

pytestmark = pytest.mark.integration

QUESTIONS = ["What is the capital of France?", "Write a haiku about rain.",
             "Name three primary colours.", "Explain what a CPU does in one sentence.",
             "Count from one to ten.", "What is two plus two?",
             "Give me a name for a black cat.", "Why is the sky blue?"]


def engine(**options: str) -> LlamaCppEngine:
    loaded = LlamaCppEngine(EngineConfig(model_path=model_path(), context_token_limit=2048,
                                         n_threads=THREADS, options=LlamaCppOptions.parse(options)))
    loaded.load()
    return loaded


@pytest.fixture(scope="module")
def batched() -> Iterator[LlamaCppEngine]:
    """Each sequence with cells of its own: outputs do not depend on the batch."""
    yield engine(max_batch="8", shared_kv="off")


def ask(text: str, **kwargs: object) -> GenerationParams:
    return GenerationParams.model_validate({
        "model_id": ModelId("smollm2-135m"), "temperature": 0.0, "max_tokens": 40,
        "messages": [ChatMessage(role="user", content=text)], **kwargs})


def alone(on: LlamaCppEngine, params: GenerationParams) -> str:
    return "".join(chunk.text for chunk in on.generate(params))


class Run:
    """Steps an engine, collecting each request's text and end."""

    def __init__(self, on: LlamaCppEngine) -> None:
        self.on = on
        self.text: dict[TaskId, str] = defaultdict(str)
        self.errors: dict[TaskId, ErrorChunk] = {}
        self.done: dict[TaskId, TaskDone] = {}
        self.joined: list[TaskId] = []
        self.final: dict[TaskId, TokenChunk] = {}
        self.token_count: dict[TaskId, int] = defaultdict(int)
        self.steps: list[set[TaskId]] = []  # the requests each step gave tokens to

    def submit(self, name: str, params: GenerationParams) -> TaskId:
        task_id = TaskId(name)
        self.on.submit(task_id, params)
        return task_id

    def step(self) -> None:
        self.steps.append(set())
        for event in self.on.step():
            match event:
                case TaskJoined(task_id=task_id):
                    self.joined.append(task_id)
                case TaskOutput(task_id=task_id, chunk=TokenChunk() as chunk):
                    if chunk.token_ids:
                        self.steps[-1].add(task_id)
                    self.text[task_id] += chunk.text
                    self.token_count[task_id] += len(chunk.token_ids)
                    if chunk.finish_reason is not None:
                        self.final[task_id] = chunk
                case TaskOutput(task_id=task_id, chunk=ErrorChunk() as error):
                    self.errors[task_id] = error
                case TaskDone(task_id=task_id):
                    self.done[task_id] = event

    def until_idle(self, max_steps: int = 2000) -> None:
        for _ in range(max_steps):
            if not self.on.has_work:
                return
            self.step()
        raise AssertionError("the engine still had work after the step bound")


def test_requests_decoded_together_give_what_each_gives_alone(
        batched: LlamaCppEngine) -> None:
    expected = {question: alone(batched, ask(question)) for question in QUESTIONS}
    run = Run(batched)
    ids = {run.submit(f"q{i}", ask(question)): question for i, question in enumerate(QUESTIONS)}
    run.until_idle()
    assert set(run.joined) == set(ids) and not run.errors
    assert all(run.done[task_id].status == "complete" for task_id in ids)
    differing = [ids[t] for t in ids if run.text[t] != expected[ids[t]]]
    assert not differing, f"batched greedy text differs from alone for {differing}"


def test_where_one_at_a_time_measured_cheapest_the_requests_take_turns() -> None:
    four = engine(max_batch="4", shared_kv="off")
    questions = QUESTIONS[:4]
    expected = {question: alone(four, ask(question)) for question in questions}
    # This machine's steps as a one-thread CPU measures them (bench/README.md): one token
    # alone costs least. The engine's own figures are replaced so the test does not
    # depend on this machine's timing; nothing is re-measured during the test.
    widths = StepWidths(probe_every=10**9)
    per_token = {4: 0.0084, 3: 0.0089, 2: 0.0096, 1: 0.0075}
    for decoding in [4] * 3 * FIRST_SAMPLES + [3] * FIRST_SAMPLES:
        width = widths.choose(decoding)
        widths.record(width, width * per_token[width])
    assert widths.per_token() == pytest.approx(per_token)
    batch = four._loaded()[2]
    batch.widths = widths
    run = Run(four)
    ids = {run.submit(f"q{i}", ask(question)): question for i, question in enumerate(questions)}
    run.step()  # the four prompts, prefilled together: each its first token
    assert run.steps[0] == set(ids)
    run.until_idle()
    assert all(run.text[task_id] == expected[question] for task_id, question in ids.items())
    decode_steps = run.steps[1:]
    assert all(len(given) <= 1 for given in decode_steps), "a step decoded several"
    assert set().union(*decode_steps[:8]) == set(ids), "the requests did not take turns"
    assert len(decode_steps) >= sum(run.token_count.values()) - len(ids)


def test_a_request_joins_a_running_batch_and_a_cancelled_one_leaves_it(
        batched: LlamaCppEngine) -> None:
    expected = alone(batched, ask(QUESTIONS[1]))
    run = Run(batched)
    long = run.submit("long", ask("Count to one hundred.", max_tokens=300))
    for _ in range(5):
        run.step()
    late = run.submit("late", ask(QUESTIONS[1]))
    for _ in range(5):
        run.step()
    assert late in run.joined and long not in run.done
    batched.cancel(long)
    run.until_idle()
    assert run.done[long].status == "cancelled"
    assert run.done[late].status == "complete" and run.text[late] == expected


def test_more_requests_than_sequences_wait_their_turn() -> None:
    two = engine(max_batch="2", shared_kv="off")
    expected = [alone(two, ask(question, max_tokens=12)) for question in QUESTIONS[:5]]
    run = Run(two)
    ids = [run.submit(f"q{i}", ask(q, max_tokens=12)) for i, q in enumerate(QUESTIONS[:5])]
    run.step()
    assert len(run.joined) == 2, "only as many join as there are sequences"
    run.until_idle()
    assert [run.text[task_id] for task_id in ids] == expected


def test_shared_cells_that_run_short_pause_the_youngest_and_lose_nothing() -> None:
    # 256 shared cells for four requests of ~45 prompt and 100 generated tokens each
    # (raw prompts the model goes on counting): younger requests give up their cells,
    # are fed them again later, and finish.
    short = LlamaCppEngine(EngineConfig(model_path=model_path(), context_token_limit=256,
                                        n_threads=THREADS,
                                        options=LlamaCppOptions.parse({"max_batch": "4"})))
    short.load()
    run = Run(short)
    counting = [", ".join(str(n) for n in range(i * 10, i * 10 + 12)) + "," for i in range(4)]
    ids = [run.submit(f"q{i}", ask("", raw_prompt=prompt, max_tokens=100))
           for i, prompt in enumerate(counting)]
    run.until_idle()
    assert not run.errors and all(run.done[task_id].status == "complete" for task_id in ids)
    for task_id in ids:
        usage = run.final[task_id].usage
        assert usage is not None and usage.completion_tokens == run.token_count[task_id], \
            "every generated token reached the stream once"
    batch = short._batch
    assert batch is not None and batch.pauses > 0, "the cells never ran short"


def test_a_long_prompt_prefilled_in_chunks_beside_others_gives_its_answer_alone() -> None:
    chunked = engine(prefill_chunk="16", max_batch="4", shared_kv="off")
    question = "Summarise this: " + " ".join(QUESTIONS * 3)
    expected = alone(chunked, ask(question))
    run = Run(chunked)
    others = [run.submit(f"o{i}", ask(q, max_tokens=60)) for i, q in enumerate(QUESTIONS[:3])]
    for _ in range(3):
        run.step()  # the others are decoding when the long prompt arrives
    long = run.submit("long", ask(question))
    run.until_idle()
    assert run.text[long] == expected and all(run.text[o] for o in others)


def test_a_conversation_moved_out_for_others_comes_back_from_host_memory() -> None:
    one = engine(max_batch="1")
    history = [ChatMessage(role="user", content="Name a fruit.")]

    def turn() -> TokenChunk:
        chunks = list(one.generate(GenerationParams(
            model_id=ModelId("smollm2-135m"), messages=history, temperature=0.0,
            max_tokens=12, session_id=ConversationId("s1"))))
        history.append(ChatMessage(role="assistant", content="".join(c.text for c in chunks)))
        return chunks[-1]

    first = turn()
    history.append(ChatMessage(role="user", content="And a vegetable?"))
    alone(one, ask("Something else entirely, about ships.", session_id="s2"))
    second = turn()
    assert first.usage is not None and second.usage is not None
    assert second.usage.cached_tokens > first.usage.prompt_tokens, \
        "the only sequence served s2 in between: s1's cells came back from host memory"


def test_grammar_and_plain_requests_share_a_batch(batched: LlamaCppEngine) -> None:
    run = Run(batched)
    schema = {"type": "object", "properties": {"colour": {"type": "string",
                                                          "maxLength": 12}},
              "required": ["colour"], "additionalProperties": False}
    constrained = run.submit("json", ask("Pick a colour.", output="json", max_tokens=60,
                                         json_schema=json.dumps(schema)))
    plain = run.submit("plain", ask(QUESTIONS[0]))
    run.until_idle()
    assert set(json.loads(run.text[constrained])) == {"colour"}
    assert run.text[plain] == alone(batched, ask(QUESTIONS[0]))


def test_a_refused_request_fails_alone(batched: LlamaCppEngine) -> None:
    run = Run(batched)
    bad = run.submit("bad", ask("x", prompt_token_ids=[10**7]))
    good = run.submit("good", ask(QUESTIONS[0], max_tokens=4))
    run.until_idle()
    assert run.errors[bad].error_kind == "invalid_request" and run.done[bad].status == "failed"
    assert run.done[good].status == "complete" and run.text[good]


def test_an_embedding_request_is_answered_between_steps(batched: LlamaCppEngine) -> None:
    run = Run(batched)
    text = run.submit("text", ask(QUESTIONS[0], max_tokens=4))
    vectors = run.submit("vectors", ask("", embed=["a cat", "a kitten"]))
    run.until_idle()
    chunk = run.final[vectors]
    assert chunk.embeddings is not None and len(chunk.embeddings) == 2
    assert chunk.usage is not None and chunk.usage.prompt_tokens > 0
    assert run.done[vectors].status == "complete" and run.done[text].status == "complete"


def test_nan_logits_fail_the_request_as_pipeline_corrupt_and_leave_no_kv_behind(
        batched: LlamaCppEngine, monkeypatch: pytest.MonkeyPatch) -> None:
    import numpy as np

    from skulk.worker.engines.llama_cpp.sequences_lib import SequenceContext

    expected = alone(batched, ask(QUESTIONS[0]))
    clean = SequenceContext.decode
    poisoned = {"on": False}

    def decode(self: SequenceContext, entries: list[BatchEntry]) -> bool:
        """The real decode, then one NaN in each row of logits llama.cpp wrote, where both
        the native greedy read and the numpy path find it."""
        done = clean(self, entries)
        if done and poisoned["on"]:
            for index, entry in enumerate(entries):
                if entry.logits:
                    self.logits(index)[7] = np.float32("nan")
        return done

    monkeypatch.setattr(SequenceContext, "decode", decode)
    run = Run(batched)
    corrupt = run.submit("corrupt", ask(QUESTIONS[0]))
    for _ in range(4):
        run.step()
    assert corrupt not in run.done
    poisoned["on"] = True
    run.step()
    poisoned["on"] = False
    assert run.errors[corrupt].error_kind == "pipeline_corrupt"
    assert run.done[corrupt].status == "failed"
    # The same prompt again: its KV was dropped, so it is computed afresh, as alone.
    again = run.submit("again", ask(QUESTIONS[0]))
    run.until_idle()
    assert run.text[again] == expected and again not in run.errors


def test_an_answer_whose_grammar_breaks_ends_with_an_error_beside_others(
        batched: LlamaCppEngine, monkeypatch: pytest.MonkeyPatch) -> None:
    """A failed-over answer resumed after tokens its grammar rejects, and a token the
    mask should have forbidden (a masking fault, faked), each end with an error chunk
    that says so; the plain request beside them completes and the engine serves on."""
    schema = json.dumps({"type": "object", "properties": {"a": {"type": "integer"}}})
    model = batched._model
    assert model is not None
    rejected = model.tokenize("[1,", add_bos=False, special=False)
    run = Run(batched)
    resumed = run.submit("resumed", ask("Answer.", output="json", json_schema=schema,
                                        continuation=rejected))
    plain = run.submit("plain", ask(QUESTIONS[0], max_tokens=4))
    run.until_idle()
    assert run.errors[resumed].error_kind == "internal"
    assert "cannot resume" in run.errors[resumed].message
    assert run.done[resumed].status == "failed" and run.done[plain].status == "complete"
    [bracket] = model.tokenize("[", add_bos=False, special=False)
    monkeypatch.setattr(Constraint, "vetted", lambda self, token, remaining: bracket)
    run = Run(batched)
    faulty = run.submit("faulty", ask("Answer.", output="json", json_schema=schema,
                                      max_tokens=200))
    plain = run.submit("plain", ask(QUESTIONS[0], max_tokens=4))
    run.until_idle()
    assert "broke the request's grammar" in run.errors[faulty].message
    assert run.done[faulty].status == "failed" and run.done[plain].status == "complete"
    monkeypatch.undo()
    assert json.loads(alone(batched, ask("Answer.", output="json", json_schema=schema)))
