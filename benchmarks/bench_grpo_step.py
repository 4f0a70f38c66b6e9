"""Seconds per GRPO step on the tiny model: plain ``trl.GRPOTrainer`` vs ``CountdownGRPOTrainer`` and presets.

The baseline is TRL's own trainer with the env-independent ``countdown_reward`` (same model, data, batch), so the
ratio shows what the base class adds (env scoring into Trajectory records, gathers, metrics) and what each preset
costs (prime_rl runs one extra no-grad forward per micro-batch when π_old exists, here num_iterations=2).

    python benchmarks/bench_grpo_step.py [--steps 6] [--completion-tokens 64]

``--model smollm2-135m`` (or a model folder, e.g. its warm start) times the real pretrained model instead of the tiny
one; ``--no-presets`` keeps the baseline and the base class only; ``--lora-rank R`` adds the base class training a
LoRA adapter of rank R (``runs.lora.lora_config``) in place of every weight.
"""

from __future__ import annotations

import argparse
import gc
import os
import tempfile

os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--completion-tokens", type=int, default=64)
    parser.add_argument("--model", default="tiny", help="tiny (built here), smollm2-135m, or a model folder")
    parser.add_argument("--no-presets", action="store_true", help="time the baseline and the base class only")
    parser.add_argument("--lora-rank", type=int, help="also time the base class training a LoRA adapter of this rank")
    args = parser.parse_args()

    import torch
    from transformers import AutoModelForCausalLM
    from trl import GRPOConfig, GRPOTrainer

    from countdown_env import Puzzle
    from countdown_env.rewards import countdown_reward
    from learners.core.trainer import CountdownGRPOTrainer
    from learners.grpo import GRPOPresetTrainer, grpo_config
    from learners.pipeline.data import prompt_dataset
    from learners.pipeline.models import resolve_model
    from learners.pipeline.models.tiny import build_tiny_model, tiny_cpu_kwargs
    from learners.pipeline.models.tokenizer_io import load_tokenizer
    from learners.pipeline.runs.lora import lora_config

    torch.manual_seed(0)
    tmp = tempfile.mkdtemp()
    model_dir = build_tiny_model(os.path.join(tmp, "m")) if args.model == "tiny" else resolve_model(args.model)
    puzzles = [Puzzle((a, b, c), t) for a, b, c, t in [(3, 7, 11, 21), (2, 5, 9, 19), (4, 6, 8, 32), (1, 3, 5, 15)]]
    data = prompt_dataset(puzzles * 8, "compact")
    common = tiny_cpu_kwargs(
        os.path.join(tmp, "o"),
        per_device_train_batch_size=16,
        num_generations=8,
        max_completion_length=args.completion_tokens,
        max_steps=args.steps + 1,
        learning_rate=1e-5,
        temperature=1.0,
    )

    from transformers.trainer_callback import PrinterCallback

    def timed(name, build):
        trainer = build()
        trainer.remove_callback(PrinterCallback)
        trainer.train()
        times = [e["step_time"] for e in trainer.state.log_history if "step_time" in e][1:]  # drop warm-up step
        del trainer
        gc.collect()  # the next trainer is built only once this one's model and optimiser are gone
        per_step = sum(times) / len(times)
        print(f"{name:<34} {per_step:7.3f} s/step  ({len(times)} steps)")
        return per_step

    def model():
        return AutoModelForCausalLM.from_pretrained(model_dir)

    tok = load_tokenizer(model_dir)
    base = timed(
        "trl.GRPOTrainer (baseline)",
        lambda: GRPOTrainer(
            model=model(),
            reward_funcs=countdown_reward,
            args=GRPOConfig(**common),
            train_dataset=data,
            processing_class=tok,
        ),
    )
    ours = timed(
        "CountdownGRPOTrainer (env reward)",
        lambda: CountdownGRPOTrainer(
            model=model(), args=GRPOConfig(**common), train_dataset=data, processing_class=tok
        ),
    )
    print(f"{'ratio vs baseline':<34} {ours / base:7.2f}x")
    if args.lora_rank:
        lora = timed(
            f"CountdownGRPOTrainer, LoRA r={args.lora_rank}",
            lambda: CountdownGRPOTrainer(
                model=model(), args=GRPOConfig(**common), train_dataset=data, processing_class=tok,
                peft_config=lora_config(args.lora_rank),
            ),
        )  # fmt: skip
        print(f"{'  ratio vs full fine-tuning':<34} {lora / ours:7.2f}x")
    if args.no_presets:
        return
    for preset in ("grpo", "dr_grpo", "dapo"):
        t = timed(
            f"preset {preset}",
            lambda p=preset: GRPOPresetTrainer(
                model=model(), args=grpo_config(p, **common), train_dataset=data, processing_class=tok
            ),
        )
        print(f"{'  ratio vs baseline':<34} {t / base:7.2f}x")
    # prime_rl's ratio terms need π_old: num_iterations=2 (one generation per two steps); compare like with like
    two = dict(num_iterations=2)
    ref = timed(
        "preset grpo, num_iterations=2",
        lambda: GRPOPresetTrainer(
            model=model(), args=grpo_config("grpo", **common, **two), train_dataset=data, processing_class=tok
        ),
    )
    t = timed(
        "preset prime_rl, num_iterations=2",
        lambda: GRPOPresetTrainer(
            model=model(), args=grpo_config("prime_rl", **common, **two), train_dataset=data, processing_class=tok
        ),
    )
    print(f"{'  ratio vs grpo, num_iterations=2':<34} {t / ref:7.2f}x")


if __name__ == "__main__":
    main()
