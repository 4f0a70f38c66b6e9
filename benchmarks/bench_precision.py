"""float32 against bfloat16 for a GRPO step (issue 63): samples per hour, the step split, memory and the mismatch.

One invocation runs each arm in its own process, one after the other, with the same preset, seed and steps: the
SmolLM2-135M shipped warm start (``cpu-smollm2-vllm``: LoRA r16 on every linear layer, 4 prompts x 8 completions per
step, 128 new tokens, colocated vLLM engine) or the tiny warm start (``cpu-tiny-vllm`` at the same batch shape), on
``--threads`` torch threads. Per arm it times ``--steps`` steps after one warm-up step and reports:

- samples (completions) per hour over the timed steps, and the step's split: ``generate`` (the weight sync and vLLM's
  decode), ``score`` (the Countdown rewards) and ``update`` (the rest: the forward for the old log-probabilities, the
  loss's forward and backward, the optimiser);
- peak resident memory of the arm's process (``ru_maxrss``; the colocated engine runs inside it);
- the sampling-training mismatch: ``|log p_engine - log p_trainer|`` per completion token (median, p99, max), from
  TRL's importance-sampling correction, which every arm turns on so that both arms pay its forward;
- achieved GFLOPS of the update, ``(2 (old log-probs forward) + 4 (forward, backward to the activations)) x N x
  tokens / update seconds`` (N the model's parameters; LoRA's own weight gradients neglected), beside the float32 and
  bfloat16 rate of a 2048 x 576 x 1536 matmul measured at the start of the same run.

It writes ``benchmarks/results/precision/<model>-<cpu>.json`` (``samples_per_hour`` per arm,
``ratio_bf16_to_fp32``, ``cpu_flags``, ``model``, ...). Figures depend on the machine and its load; it asserts nothing.

    python benchmarks/bench_precision.py --model smollm2 --steps 10
    python benchmarks/bench_precision.py --model tiny --steps 10
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

PRESETS = {
    "smollm2": ("cpu-smollm2-vllm", []),
    "tiny": ("cpu-tiny-vllm", ["model=warm-start", "trainer.max_completion_length=128", "trainer.temperature=1.0",
                               "trainer.per_device_train_batch_size=8", "trainer.gradient_accumulation_steps=4"]),
}  # fmt: skip
ARMS = ("fp32", "bf16", "bf16-trl-logps")
# ``bf16-trl-logps``: the bf16 step with TRL's own log-probability call, before the base trainer's two cuts (the LM head
# on the completion tokens only, no PEFT input casts under autocast); same values, so it isolates the cuts' time.


def matmul_gflops(dtype_name: str, repeats: int = 20) -> float:
    """The best of ``repeats`` 2048 x 576 x 1536 matmuls, in GFLOPS."""
    import torch

    dtype = getattr(torch, dtype_name)
    a, b = torch.randn(2048, 576, dtype=dtype), torch.randn(576, 1536, dtype=dtype)
    for _ in range(3):
        a @ b
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        a @ b
        best = min(best, time.perf_counter() - start)
    return 2 * 2048 * 576 * 1536 / best / 1e9


def run_arm(model: str, precision: str, steps: int, out: Path) -> dict:
    """One arm in this process: build the run's trainer, time each stage of every step, return the figures."""
    from learners.pipeline.runs.driver import build_trainer
    from learners.pipeline.runs.run_config import RunConfig

    preset, sets = PRESETS[model]
    sets = [*sets, "eval.every=0", "trainer.vllm_importance_sampling_correction=true", "trainer.save_steps=1000000",
            "trainer.logging_steps=1", f"trainer.max_steps={steps + 1}"]  # fmt: skip
    run = RunConfig.load(preset, sets=sets, flags={"precision": precision.split("-")[0]})
    trainer = build_trainer(run, out)
    if precision == "bf16-trl-logps":
        import functools

        from trl import GRPOTrainer

        trainer._get_per_token_logps_and_entropies = functools.partial(
            GRPOTrainer._get_per_token_logps_and_entropies, trainer
        )
    stages: dict[str, list[float]] = {"generate": [], "score": []}
    deltas: list[np.ndarray] = []
    tokens: list[int] = []

    def timed(name, method):
        def wrapper(*args, **kwargs):
            start = time.perf_counter()
            try:
                return method(*args, **kwargs)
            finally:
                stages[name].append(time.perf_counter() - start)

        return wrapper

    trainer._generate = timed("generate", trainer._generate)
    trainer._calculate_rewards = timed("score", trainer._calculate_rewards)
    generate_and_score = trainer._generate_and_score_completions

    def recorded(inputs):
        batch = generate_and_score(inputs)
        mask = batch["completion_mask"].bool()
        delta = (batch["old_per_token_logps"] - batch["sampling_per_token_logps"]).abs()[mask]
        deltas.append(delta[~delta.isnan()].float().numpy())
        tokens.append(int(batch["prompt_mask"].sum() + batch["completion_mask"].sum()))
        return batch

    trainer._generate_and_score_completions = recorded
    trainer.train()
    trainer.release_generation_engine()
    step_times = [e["step_time"] for e in trainer.state.log_history if "step_time" in e]
    generations = len(stages["generate"]) // len(step_times) if step_times else 1
    per_step = lambda values: [sum(values[i : i + generations]) for i in range(0, len(values), generations)]  # noqa: E731
    generate, score = per_step(stages["generate"]), per_step(stages["score"])
    timed_steps = slice(1, None)  # the first step warms up (engine caches, allocator, oneDNN kernels)
    step_s = np.array(step_times[timed_steps])
    update_s = step_s - np.array(generate[timed_steps]) - np.array(score[timed_steps])
    samples = trainer.args.per_device_train_batch_size * trainer.args.gradient_accumulation_steps
    params = sum(p.numel() for n, p in trainer.model.named_parameters() if "lora_" not in n)
    step_tokens = np.array(tokens[timed_steps] if len(tokens) == len(step_times) else tokens[-len(step_s) :])
    delta = np.concatenate(deltas[1:]) if len(deltas) > 1 else np.concatenate(deltas)
    return {
        "precision": precision,
        "steps_timed": len(step_s),
        "samples_per_step": samples,
        "samples_per_hour": samples * 3600 / float(step_s.mean()),
        "step_seconds": {"median": float(np.median(step_s)), "mean": float(step_s.mean())},
        "split_seconds_median": {
            "generate": float(np.median(generate[timed_steps])),
            "score": float(np.median(score[timed_steps])),
            "update": float(np.median(update_s)),
        },
        "update_gflops": float(np.median(6 * params * step_tokens / 1e9 / update_s)),
        "parameters": params,
        "peak_rss_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20,
        "logp_mismatch": {
            "tokens": int(delta.size),
            "median": float(np.median(delta)),
            "p99": float(np.quantile(delta, 0.99)),
            "max": float(delta.max()),
        },  # fmt: skip
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", choices=sorted(PRESETS), default="smollm2")
    parser.add_argument("--steps", type=int, default=10, help="timed steps per arm (after one warm-up step)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--arms", nargs="+", choices=ARMS, default=list(ARMS))
    parser.add_argument("--out", type=Path, help="the JSON (default: benchmarks/results/precision/MODEL-CPU.json)")
    parser.add_argument("--arm", choices=ARMS, help=argparse.SUPPRESS)  # the child process of one arm
    parser.add_argument("--arm-json", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.arm:
        import torch

        torch.set_num_threads(args.threads)
        with tempfile.TemporaryDirectory() as tmp:
            figures = run_arm(args.model, args.arm, args.steps, Path(tmp) / "run")
        args.arm_json.write_text(json.dumps(figures))
        os._exit(0)  # a colocated engine's threads would hold the interpreter's exit

    import torch

    from learners.pipeline.machine import cpu_flag_list, cpu_record

    torch.set_num_threads(args.threads)
    cpu = cpu_record()
    rates = {name: matmul_gflops(name) for name in ("float32", "bfloat16")}
    print(
        f"CPU {cpu['model']}; flags {' '.join(f for f in cpu_flag_list() if 'bf16' in f or f in ('avx2', 'avx512f'))}"
    )
    print(f"matmul 2048x576x1536 on {args.threads} threads: float32 {rates['float32']:.0f} GFLOPS, bfloat16 "
          f"{rates['bfloat16']:.0f} GFLOPS ({rates['bfloat16'] / rates['float32']:.1f}x)")  # fmt: skip
    arms = {}
    env = {**os.environ, "OMP_NUM_THREADS": str(args.threads)}
    for precision in args.arms:
        with tempfile.TemporaryDirectory() as tmp:
            child = Path(tmp) / "arm.json"
            argv = [sys.executable, __file__, "--model", args.model, "--steps", str(args.steps), "--threads",
                    str(args.threads), "--arm", precision, "--arm-json", str(child)]  # fmt: skip
            start = time.perf_counter()
            result = subprocess.run(argv, env=env, capture_output=True, text=True)
            if result.returncode != 0 or not child.is_file():
                print(result.stderr[-3000:], file=sys.stderr)
                raise SystemExit(f"arm {precision} failed (exit {result.returncode})")
            arms[precision] = {**json.loads(child.read_text()), "arm_wall_seconds": time.perf_counter() - start}
        a = arms[precision]
        split = a["split_seconds_median"]
        print(f"{precision}: {a['samples_per_hour']:.0f} samples/h; step median {a['step_seconds']['median']:.1f} s "
              f"(generate {split['generate']:.1f}, score {split['score']:.2f}, update {split['update']:.1f}); update "
              f"{a['update_gflops']:.0f} GFLOPS; peak {a['peak_rss_gb']:.2f} GB; |dlogp| median "
              f"{a['logp_mismatch']['median']:.1e} p99 {a['logp_mismatch']['p99']:.1e} "
              f"max {a['logp_mismatch']['max']:.1e}", flush=True)  # fmt: skip
    record = {
        "model": args.model,
        "preset": PRESETS[args.model][0],
        "threads": args.threads,
        "cpu": cpu["model"],
        "cpu_flags": cpu_flag_list(),
        "matmul_gflops": rates,
        "arms": arms,
        "samples_per_hour": {name: arm["samples_per_hour"] for name, arm in arms.items()},
        "command": f"python benchmarks/bench_precision.py --model {args.model} --steps {args.steps} "
        f"--threads {args.threads} --arms {' '.join(args.arms)}",
    }
    if {"fp32", "bf16"} <= arms.keys():
        record["ratio_bf16_to_fp32"] = arms["bf16"]["samples_per_hour"] / arms["fp32"]["samples_per_hour"]
        print(f"bf16 / fp32 samples per hour: {record['ratio_bf16_to_fp32']:.2f}x")
    if {"bf16", "bf16-trl-logps"} <= arms.keys():
        record["ratio_bf16_to_bf16_trl_logps"] = (
            arms["bf16"]["samples_per_hour"] / arms["bf16-trl-logps"]["samples_per_hour"]
        )
        print(f"bf16 / bf16 with TRL's log-probabilities: {record['ratio_bf16_to_bf16_trl_logps']:.2f}x")
    from benchmarks._common import write_record

    write_record(record, "precision", cpu["model"], args.out, prefix=f"{args.model}-")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
