"""Generation speed: ``transformers`` ``generate`` (HFSampler) vs vLLM (VLLMSampler), and seconds per GRPO step.

Both backends go through :mod:`learners.sampling` (the code eval, env rollouts and T-SPMO replay use) on the same
token-id prompts with the same budgets; tokens/s is generated tokens over wall seconds, the median of
``--repeats`` timed calls after one warm-up call, and the ratio vLLM/HF is taken within this run. Models:

- ``tiny``: the shipped warm start (1.07 M parameters, character vocabulary), on Countdown prompts of ``tiny_n3``;
  completions stop at the end-of-turn token, as in training;
- ``mid``: a random-init Qwen2 of ~43 M parameters (hidden 512, 8 layers, vocabulary 32 000), random prompts,
  generating to the budget (a random model almost never samples its eos);
- ``qwen3-0.6b`` (``--device cuda``): Qwen3-0.6B's architecture with random weights;
- ``smollm2-135m``: the real pretrained SmolLM2-135M-Instruct (``countdown models install smollm2-135m``), or the
  folder ``--smollm2`` names (e.g. its warm start), on Countdown prompts of ``tiny_n3`` in its chat template;
  completions stop at its end of turn.

Then ``--grpo-steps`` GRPO steps of ``--grpo-model`` (the tiny warm start, or ``smollm2-135m``; 2 prompts x 8
completions of up to ``--grpo-tokens`` tokens, dataset route) with TRL's transformers generation and with colocated
vLLM (``use_vllm=True, vllm_mode="colocate"``; the weight sync included), timed per step after one warm-up step; the
engine's start is reported apart.

    python benchmarks/bench_generation.py                      # CPU: tiny and mid, ~5 min on 2 cores
    python benchmarks/bench_generation.py --device cuda --models tiny qwen3-0.6b
    python benchmarks/bench_generation.py --models smollm2-135m --grpo-model smollm2-135m --grpo-steps 3

Times are wall clock: run it on a quiet machine. ``--out FILE`` writes the figures as JSON.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "2")


def build_random(out: Path, name: str) -> tuple[Path, int]:
    """A random-init model folder (config + safetensors) vLLM and transformers can both load; its parameter count."""
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM, Qwen3Config, Qwen3ForCausalLM

    from benchmarks._common import MID_43M, QWEN3_0_6B

    torch.manual_seed(0)
    if name == "mid":
        model = Qwen2ForCausalLM(Qwen2Config(**MID_43M, torch_dtype="float32"))
    else:
        model = Qwen3ForCausalLM(Qwen3Config(**QWEN3_0_6B, max_position_embeddings=4096, tie_word_embeddings=True))
    model.save_pretrained(out)
    return out, sum(p.numel() for p in {id(p): p for p in model.parameters()}.values())


def prompts_for(name: str, count: int, tokenizer):
    import random

    if name in ("tiny", SMOLLM2):
        from countdown_env import Puzzle
        from countdown_env.task import CountdownTask
        from learners.pipeline.evaluation.evaluate import load_rows, prompt_token_ids

        rows = load_rows(Path(__file__).resolve().parents[1] / "datasets" / "tiny_n3.jsonl", limit=count)
        return prompt_token_ids(tokenizer, CountdownTask(template="compact"), [Puzzle.from_dict(r) for r in rows])
    from benchmarks._common import MID_43M

    rng = random.Random(0)
    return [[rng.randrange(3, MID_43M["vocab_size"]) for _ in range(64)] for _ in range(count)]


def time_calls(sampler, prompts, sampling, n, budget, repeats):
    sampler.sample(prompts[:2], sampling, n=1, max_new_tokens=budget)  # warm-up
    rates, seconds = [], []
    for _ in range(repeats):
        start = time.perf_counter()
        out = sampler.sample(prompts, sampling, n=n, max_new_tokens=budget)
        elapsed = time.perf_counter() - start
        tokens = sum(len(s.ids) for row in out for s in row)
        rates.append(tokens / elapsed)
        seconds.append(elapsed)
    return {"tokens_per_s": statistics.median(rates), "seconds": statistics.median(seconds), "tokens": tokens}


SMOLLM2 = "smollm2-135m"


def real_model_folder(name: str, args) -> Path:
    """The folder of a real model: ``--smollm2`` when given, else the installed ``smollm2-135m``."""
    from learners.pipeline.models import resolve_model

    return Path(args.smollm2) if args.smollm2 else Path(resolve_model(name))


class _Null:
    pad_token_id = 0
    eos_token_id = None


def bench_model(name, device, args, work: Path) -> dict:
    import torch
    from transformers import AutoModelForCausalLM

    from learners.sampling import HFSampler, Sampling, VLLMSampler

    if name in ("tiny", SMOLLM2):
        from learners.pipeline.models.tokenizer_io import load_tokenizer
        from learners.pipeline.runs.warm_start import SHIPPED_DIR

        folder = SHIPPED_DIR if name == "tiny" else real_model_folder(name, args)
        tokenizer = load_tokenizer(folder)
        model = AutoModelForCausalLM.from_pretrained(folder)
        size = sum(p.numel() for p in {id(p): p for p in model.parameters()}.values())
    else:
        folder, size = build_random(work / name, name)
        tokenizer = _Null()
        model = AutoModelForCausalLM.from_pretrained(folder)
    dtype = torch.float32 if device == "cpu" else torch.bfloat16
    model = model.to(device=device, dtype=dtype)
    prompts = prompts_for(name, args.prompts, tokenizer)
    sampling = Sampling(temperature=1.0, seed=0)
    result = {"model": name, "parameters": size, "prompts": len(prompts), "n": args.n, "budget": args.budget}
    hf = HFSampler(model, tokenizer, batch_size=len(prompts) * args.n)
    result["hf"] = time_calls(hf, prompts, sampling, args.n, args.budget, args.repeats)
    del hf, model
    start = time.perf_counter()
    engine_kwargs = dict(dtype="float32" if device == "cpu" else "bfloat16", max_model_len=1024, seed=0)
    real_prompts = name in ("tiny", SMOLLM2)
    if not real_prompts:
        engine_kwargs["skip_tokenizer_init"] = True
    vllm = VLLMSampler.from_model_dir(folder, tokenizer if real_prompts else None, **engine_kwargs)
    result["vllm_engine_start_s"] = time.perf_counter() - start
    result["vllm"] = time_calls(vllm, prompts, sampling, args.n, args.budget, args.repeats)
    vllm.close()
    result["ratio_vllm_over_hf"] = result["vllm"]["tokens_per_s"] / result["hf"]["tokens_per_s"]
    return result


def bench_grpo(use_vllm: bool, steps: int, work: Path, folder: Path, tokens: int, micro_batch: int = 16) -> dict:
    from transformers import AutoModelForCausalLM, TrainerCallback

    from countdown_env import Puzzle
    from learners.core.registry import get_learner
    from learners.pipeline.data import prompt_dataset
    from learners.pipeline.models.tiny import tiny_cpu_kwargs
    from learners.pipeline.models.tokenizer_io import load_tokenizer

    class StepTimes(TrainerCallback):
        def __init__(self):
            self.times, self.start = [], None

        def on_step_begin(self, args, state, control, **kwargs):
            self.start = time.perf_counter()

        def on_step_end(self, args, state, control, **kwargs):
            self.times.append(time.perf_counter() - self.start)

    puzzles = [Puzzle((a, b, c), t) for a, b, c, t in [(3, 7, 11, 21), (2, 5, 9, 19), (4, 6, 8, 32), (1, 3, 5, 15)]]
    spec = get_learner("grpo")
    extra = dict(use_vllm=True, vllm_mode="colocate") if use_vllm else {}
    config = spec.make_config(
        **tiny_cpu_kwargs(
            work / f"grpo-{use_vllm}",
            per_device_train_batch_size=micro_batch,  # 16 rows per step either way (gradient accumulation)
            gradient_accumulation_steps=16 // micro_batch,
            num_generations=8,
            max_completion_length=tokens,
            max_steps=steps + 1,
            learning_rate=1e-5,
            temperature=0.8,
            **extra,
        )
    )
    _, trainer_class = spec.load()
    timer = StepTimes()
    start = time.perf_counter()
    trainer = trainer_class(
        model=AutoModelForCausalLM.from_pretrained(folder),
        args=config,
        train_dataset=prompt_dataset(puzzles * 16, "compact"),
        processing_class=load_tokenizer(folder),
        callbacks=[timer],
    )
    built = time.perf_counter() - start
    trainer.train()
    times = timer.times[1:]
    history = trainer.state.log_history
    del trainer
    gc.collect()  # a 135 M model's trainer (weights, AdamW, engine) must be gone before the next one is built
    lengths = [e["countdown/mean_completion_length"] for e in history[1:] if
               "countdown/mean_completion_length" in e]  # fmt: skip
    return {
        "backend": "vllm-colocate" if use_vllm else "hf",
        "model": folder.name,
        "max_completion_length": tokens,
        "micro_batch": micro_batch,
        "mean_completion_tokens": statistics.mean(lengths) if lengths else None,
        "build_s": built,
        "steps": len(times),
        "s_per_step": statistics.median(times),
        "s_per_step_min": min(times),
        "s_per_step_max": max(times),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    parser.add_argument("--models", nargs="+", default=["tiny", "mid"], choices=("tiny", "mid", "qwen3-0.6b", SMOLLM2))
    parser.add_argument("--smollm2", help="the smollm2-135m rows on this folder (e.g. its warm start)")
    parser.add_argument("--prompts", type=int, default=16, help="prompts per call")
    parser.add_argument("--n", type=int, default=8, help="samples per prompt")
    parser.add_argument("--budget", type=int, default=128, help="max new tokens")
    parser.add_argument("--repeats", type=int, default=3, help="timed calls per backend (median)")
    parser.add_argument("--grpo-steps", type=int, default=6, help="timed GRPO steps per backend (0: skip)")
    parser.add_argument("--grpo-model", default="tiny", choices=("tiny", SMOLLM2), help="the GRPO steps' model")
    parser.add_argument("--grpo-tokens", type=int, default=128, help="the GRPO steps' completion budget")
    parser.add_argument(
        "--grpo-micro-batch",
        type=int,
        default=16,
        choices=(1, 2, 4, 8, 16),
        help="rows per loss micro-batch (16 per step either way; a 135 M model needs 4 in 6 GB)",
    )
    parser.add_argument("--out", help="write the figures as JSON here")
    args = parser.parse_args()

    import torch

    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", os.cpu_count() or 1)))
    from learners.pipeline.machine import cpu_record

    work = Path(tempfile.mkdtemp())
    cpu = cpu_record()
    report = {
        "device": args.device,
        "machine": f"{cpu['arch']}, {cpu['cores']} cores",
        "cpu": cpu,
        "torch_threads": torch.get_num_threads(),
        "generation": [],
        "grpo": [],
    }
    import vllm

    report["vllm"] = vllm.__version__
    for name in args.models:
        row = bench_model(name, args.device, args, work)
        report["generation"].append(row)
        print(
            f"{name:>10} ({row['parameters'] / 1e6:.1f} M): HF {row['hf']['tokens_per_s']:8.0f} tok/s | "
            f"vLLM {row['vllm']['tokens_per_s']:8.0f} tok/s (engine start {row['vllm_engine_start_s']:.0f} s) | "
            f"vLLM/HF {row['ratio_vllm_over_hf']:.2f}x",
            flush=True,
        )
    if args.grpo_steps and args.device == "cpu":
        from learners.pipeline.runs.warm_start import SHIPPED_DIR

        folder = SHIPPED_DIR if args.grpo_model == "tiny" else real_model_folder(args.grpo_model, args)
        for use_vllm in (False, True):
            row = bench_grpo(use_vllm, args.grpo_steps, work, folder, args.grpo_tokens, args.grpo_micro_batch)
            report["grpo"].append(row)
            print(
                f"GRPO step, {row['backend']:>13}: {row['s_per_step']:.2f} s (min {row['s_per_step_min']:.2f}, "
                f"max {row['s_per_step_max']:.2f}; trainer built in {row['build_s']:.0f} s)",
                flush=True,
            )
        hf, vl = report["grpo"]
        report["grpo_ratio_vllm_over_hf"] = vl["s_per_step"] / hf["s_per_step"]
        print(f"GRPO s/step vLLM/HF: {report['grpo_ratio_vllm_over_hf']:.2f}x")
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
