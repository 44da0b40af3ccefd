"""The llama.cpp engine (llama-cpp-python on the CPU): the only module that imports it.

It renders the prompt with the GGUF's own chat template, exactly as llama-cpp-python's
`create_chat_completion` does, then runs its own token loop over `Llama.generate`: the
same sampler, so greedy output is identical, with exact token counts, incremental UTF-8
decoding and stop-sequence hold-back.
"""

import codecs
import os
import random
from collections.abc import Iterator
from typing import Any

import llama_cpp
from llama_cpp.llama_chat_format import Jinja2ChatFormatter

from skulk.shared.types.chunks import FinishReason, TokenChunk, Usage
from skulk.shared.types.tasks import GenerationParams
from skulk.worker.engines.protocol import ContextOverflow, EngineConfig, InvalidRequest
from skulk.worker.engines.stop_sequences import StopScanner

# llama-cpp-python's own chat-completion defaults, so outputs match its server's.
TOP_K = 40
MIN_P = 0.05
REPEAT_PENALTY = 1.0


class LlamaCppEngine:
    def __init__(self, config: EngineConfig) -> None:
        self._config = config
        self._llama: Any = None
        self._formatter: Any = None

    def load(self) -> None:
        if self._config.world_size != 1:
            raise InvalidRequest("the llama.cpp engine runs a model whole on one node")
        self._llama = llama_cpp.Llama(
            model_path=self._config.model_path,
            n_ctx=self._config.context_token_limit,
            n_threads=self._config.n_threads or os.cpu_count(),
            verbose=False,
        )
        template = self._llama.metadata.get("tokenizer.chat_template")
        if template is None:
            raise InvalidRequest(f"{self._config.model_path} carries no chat template")
        model = self._llama._model
        eos_id, bos_id = model.token_eos(), model.token_bos()
        self._formatter = Jinja2ChatFormatter(
            template=template,
            eos_token=model.token_get_text(eos_id) if eos_id != -1 else "",
            bos_token=model.token_get_text(bos_id) if bos_id != -1 else "",
            stop_token_ids=[eos_id],
        )

    def warm_up(self) -> None:
        warm = GenerationParams(model_id="warm-up", messages=[{"role": "user", "content": "Hi"}],  # type: ignore[arg-type, list-item]
                                max_tokens=2, temperature=0.0)
        for _ in self.generate(warm):
            pass

    def prompt_tokens(self, params: GenerationParams) -> list[int]:
        rendered = self._formatter(messages=[m.model_dump() for m in params.messages])
        tokens: list[int] = self._llama.tokenize(
            rendered.prompt.encode("utf-8"), add_bos=not rendered.added_special, special=True)
        return tokens

    def generate(self, params: GenerationParams) -> Iterator[TokenChunk]:
        prompt = self.prompt_tokens(params)
        limit = self._config.context_token_limit
        if len(prompt) >= limit:
            raise ContextOverflow(len(prompt), limit)
        room = limit - len(prompt)
        max_tokens = room if params.max_tokens is None else min(params.max_tokens, room)
        if max_tokens < 1:
            raise InvalidRequest("max_tokens must be at least 1")
        return self._stream(prompt, params, max_tokens)

    def _stream(self, prompt: list[int], params: GenerationParams,
                max_tokens: int) -> Iterator[TokenChunk]:
        llama = self._llama
        llama.set_seed(params.seed if params.seed is not None else random.getrandbits(32))
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        scanner = StopScanner(list(params.stop))
        generated = 0
        finish: FinishReason = "length"
        tokens = llama.generate(prompt, top_k=TOP_K, top_p=params.top_p, min_p=MIN_P,
                                temp=params.temperature, repeat_penalty=REPEAT_PENALTY)
        try:
            for token in tokens:
                if llama_cpp.llama_vocab_is_eog(llama._model.vocab, token):
                    finish = "stop"
                    break
                generated += 1
                text = scanner.feed(decoder.decode(llama.detokenize([token])))
                if text:
                    yield TokenChunk(text=text, token_id=token)
                if scanner.stopped:
                    finish = "stop"
                    break
                if generated >= max_tokens:
                    break
        finally:
            tokens.close()
        tail = "" if scanner.stopped else scanner.feed(decoder.decode(b"", final=True))
        tail += "" if scanner.stopped else scanner.flush()
        yield TokenChunk(text=tail, finish_reason=finish,
                         usage=Usage(prompt_tokens=len(prompt), completion_tokens=generated))
