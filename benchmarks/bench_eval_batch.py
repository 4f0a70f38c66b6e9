"""Eval decode speed of a vLLM CPU engine against how many sequences it decodes at once (``max_num_seqs``).

A trainer's colocated engine was capped by TRL at one generation's rows (32 in R2 and R3), and compare's evals go
through that engine; :data:`learners.core.vllm_sync.COLOCATED_MAX_NUM_SEQS` lifts the cap. Each arm (a cap and a
dtype) is its own process with a fresh engine on the SmolLM2-135M warm start (``countdown models install
smollm2-135m`` first), which evaluates the first ``--puzzles`` puzzles of tiny_n3 x ``--samples`` samples at T = 0.8,
128 new tokens, through :func:`learners.pipeline.evaluation.evaluate.evaluate`; tokens/s is generated tokens over the
eval's wall seconds. Ratios are to the first cap of the same dtype, and to the float32 arm of the same cap, in the
same run.

The ``bfloat16-lora`` arm (:data:`LORA_ARM`) holds the same policy another way: the installed base in bfloat16 with
the shipped adapter applied *unmerged* by vLLM's LoRA path, as a bf16 LoRA run's colocated engine would have to hold
it so that the adapter's small updates are not rounded into a bfloat16 base (``learners/core/vllm_sync.py``).

    python benchmarks/bench_eval_batch.py                                  # 32 128 256, float32 and bfloat16
    python benchmarks/bench_eval_batch.py --caps 32 128 --dtypes float32 --threads 1
    python benchmarks/bench_eval_batch.py --caps 128 --dtypes float32 bfloat16 bfloat16-lora --puzzles 16

Times are wall clock: run it on a quiet machine. It writes ``benchmarks/results/eval_batch/CPU.json`` (or ``--out``).
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

DTYPES = ("float32", "bfloat16")
LORA_ARM = "bfloat16-lora"
"""An arm whose engine holds the SmolLM2 base in bfloat16 and the shipped warm start as a vLLM LoRA adapter."""


def lora_engine(cap: int):
    """A bfloat16 engine on the installed SmolLM2 base whose every ``generate`` applies the shipped warm start's
    adapter through vLLM's LoRA path (``enable_lora``; the request carries the adapter's folder)."""
    from vllm.lora.request import LoRARequest

    from learners.pipeline.models import resolve_model
    from learners.pipeline.models.adapters import ADAPTER_CONFIG, SMOLLM2_WARM_START
    from learners.sampling.vllm_engine import build_llm

    rank = json.loads((SMOLLM2_WARM_START.folder / ADAPTER_CONFIG).read_text())["r"]
    base = resolve_model(SMOLLM2_WARM_START.base)
    llm = build_llm(str(base), dtype="bfloat16", max_num_seqs=cap, enable_lora=True, max_lora_rank=rank, max_loras=1)
    adapter = LoRARequest("warm-start", 1, str(SMOLLM2_WARM_START.folder))
    llm.generate = functools.partial(llm.generate, lora_request=adapter)
    return llm


def run_arm(cap: int, dtype: str, puzzles: int, samples: int) -> dict:
    """One eval by a fresh engine holding ``dtype`` that decodes at most ``cap`` sequences at once."""
    from countdown_env.splits.eval_sets import load_eval_set
    from learners.pipeline.compare.settings import EVAL_SET
    from learners.pipeline.data import model_task
    from learners.pipeline.evaluation.evaluate import evaluate
    from learners.pipeline.models import resolve_model
    from learners.pipeline.models.tokenizer_io import load_tokenizer
    from learners.sampling.vllm_engine import VLLMSampler, build_llm

    model = resolve_model("smollm2-135m-warm-start")
    tokenizer = load_tokenizer(model)
    rows = load_eval_set(EVAL_SET, as_dataset=False)[:puzzles]
    llm = lora_engine(cap) if dtype == LORA_ARM else build_llm(str(model), dtype=dtype, max_num_seqs=cap)
    sampler = VLLMSampler(llm, tokenizer=tokenizer)
    start = time.perf_counter()
    report = evaluate(sampler, tokenizer, rows, task=model_task(model), samples=samples, temperature=0.8,
                      max_new_tokens=128, seed=0)  # fmt: skip
    seconds = time.perf_counter() - start
    sampler.close()
    overall = report["overall"]
    return {"cap": cap, "dtype": dtype, "seconds": seconds, "tokens_per_second": report["generated_tokens_per_second"],
            "pass@1": overall["pass@1"], "mean_completion_tokens": overall["mean_completion_tokens"]}  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--caps", type=int, nargs="+", default=[32, 128, 256])
    parser.add_argument("--dtypes", nargs="+", choices=[*DTYPES, LORA_ARM], default=list(DTYPES))
    parser.add_argument("--puzzles", type=int, default=32)
    parser.add_argument("--samples", type=int, default=8)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", type=Path, help="the JSON (default: benchmarks/results/eval_batch/CPU.json)")
    parser.add_argument("--arm", nargs=2, help=argparse.SUPPRESS)  # the child process of one arm: CAP DTYPE
    parser.add_argument("--arm-json", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.arm:
        import torch

        torch.set_num_threads(args.threads)
        args.arm_json.write_text(json.dumps(run_arm(int(args.arm[0]), args.arm[1], args.puzzles, args.samples)))
        os._exit(0)  # the engine's threads would hold the interpreter's exit

    from benchmarks._common import write_record
    from learners.pipeline.machine import cpu_flag_list, cpu_record

    cpu = cpu_record()
    print(f"CPU {cpu['model']}; {args.threads} thread(s); {args.puzzles} puzzles x {args.samples} samples", flush=True)
    env = {**os.environ, "OMP_NUM_THREADS": str(args.threads)}
    arms = []
    for dtype in args.dtypes:
        for cap in args.caps:
            with tempfile.TemporaryDirectory() as tmp:
                child = Path(tmp) / "arm.json"
                argv = [sys.executable, __file__, "--puzzles", str(args.puzzles), "--samples", str(args.samples),
                        "--threads", str(args.threads), "--arm", str(cap), dtype, "--arm-json", str(child)]  # fmt: skip
                result = subprocess.run(argv, env=env, capture_output=True, text=True)
                if result.returncode != 0 or not child.is_file():
                    print(result.stderr[-3000:], file=sys.stderr)
                    raise SystemExit(f"arm {cap} {dtype} failed (exit {result.returncode})")
                arm = json.loads(child.read_text())
            base = next(a for a in [*arms, arm] if a["dtype"] == dtype)
            arm["ratio_to_first_cap"] = arm["tokens_per_second"] / base["tokens_per_second"]
            ratio = f"{arm['ratio_to_first_cap']:.2f}x cap {base['cap']}"
            float32 = next((a for a in arms if a["dtype"] == "float32" and a["cap"] == cap), None)
            if float32 is not None:
                arm["ratio_to_float32"] = arm["tokens_per_second"] / float32["tokens_per_second"]
                ratio += f", {arm['ratio_to_float32']:.2f}x float32"
            arms.append(arm)
            print(f"{dtype} max_num_seqs {cap}: {arm['tokens_per_second']:.0f} tokens/s ({arm['seconds']:.0f} s, "
                  f"{ratio}); pass@1 {arm['pass@1']:.3f}", flush=True)  # fmt: skip
    command = (f"python benchmarks/bench_eval_batch.py --caps {' '.join(map(str, args.caps))} --dtypes "
               f"{' '.join(args.dtypes)} --puzzles {args.puzzles} --samples {args.samples} --threads {args.threads}")
    record = {"cpu": cpu["model"], "cpu_flags": cpu_flag_list(), "threads": args.threads, "puzzles": args.puzzles,
              "samples": args.samples, "arms": arms, "command": command}  # fmt: skip
    write_record(record, "eval_batch", cpu["model"], args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
