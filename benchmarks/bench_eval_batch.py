"""Eval decode speed of a vLLM CPU engine against how many sequences it decodes at once (``max_num_seqs``).

A trainer's colocated engine was capped by TRL at one generation's rows (32 in R2 and R3), and compare's evals go
through that engine; :data:`learners.core.vllm_sync.COLOCATED_MAX_NUM_SEQS` lifts the cap. Each arm (a cap and a
dtype) is its own process with a fresh engine on the SmolLM2-135M warm start (``countdown models install
smollm2-135m`` first), which evaluates the first ``--puzzles`` puzzles of tiny_n3 x ``--samples`` samples at T = 0.8,
128 new tokens, through :func:`learners.pipeline.evaluation.evaluate.evaluate`; tokens/s is generated tokens over the
eval's wall seconds. Ratios are to the first cap of the same dtype, in the same run.

    python benchmarks/bench_eval_batch.py                                  # 32 128 256, float32 and bfloat16
    python benchmarks/bench_eval_batch.py --caps 32 128 --dtypes float32 --threads 1

Times are wall clock: run it on a quiet machine. It writes ``benchmarks/results/eval_batch/CPU.json`` (or ``--out``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


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
    sampler = VLLMSampler(build_llm(str(model), dtype=dtype, max_num_seqs=cap), tokenizer=tokenizer)
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
    parser.add_argument("--dtypes", nargs="+", choices=["float32", "bfloat16"], default=["float32", "bfloat16"])
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
            arms.append(arm)
            ratio = f"{arm['ratio_to_first_cap']:.2f}x cap {base['cap']}"
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
