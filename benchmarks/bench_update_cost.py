"""Update-stage cost of GRPO, S-GRPO (mask), S-GRPO (truncating) and PS-PPO on the same rollouts.

For each completion length, one synthetic rollout batch (prompt + completions of exactly that length, rewards
drawn per group so every group has both outcomes) is fed to each learner's real code path: its seam 1
(``shape_batch``; PS-PPO's forward-only ξ pass is timed separately as "xi") and then the update stage, i.e. TRL's
``_compute_loss`` (through the learner's overrides) and ``backward`` on every micro-batch of the batch. No
optimiser step (it costs the same for every method). Seam 1 runs once per length; the update stage runs
``--repeats`` times (PS-PPO ``--random-repeats`` times, since its cutoffs are redrawn at every update and its cost
is random) and the means are printed, with ratios to GRPO measured in the same run. ``+xi x GRPO`` adds the
seam-1 time (PS-PPO's ξ pass, S-GRPO's mask draw) to the update time.

Memory: ``act MB`` is the peak, over micro-batches, of the bytes autograd saved for backward (unique storages),
which is the length-dependent part of training memory and is measured the same way on CPU and GPU; on CUDA
``peak MB`` is also ``torch.cuda.max_memory_allocated`` during the update stage (weights and grads included).
Time: wall clock (synchronised) on CUDA; on CPU the process's CPU time (``time.process_time``, one thread by
default), which other jobs on a shared machine do not inflate.

    python benchmarks/bench_update_cost.py                              # CPU, small random model, ~minutes
    python benchmarks/bench_update_cost.py --device cuda --model qwen3-0.6b --rows 16 --micro-batch 4

The model is random-initialised (no downloads); the cost of a forward/backward does not depend on the weights.
Seed 001 (Table 3) reports PS-PPO at 0.55-0.67x of masking baselines at 1024 tokens and 0.31-0.36x at 4096.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import QWEN3_0_6B  # noqa: E402

MODELS = {
    # A small Qwen3 for CPU runs: the relative costs of the methods, not absolute speed.
    "cpu-small": dict(
        vocab_size=1024,
        hidden_size=128,
        intermediate_size=384,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=32,
    ),
    "qwen3-0.6b": QWEN3_0_6B,  # random weights
}
METHODS = ("grpo", "s_grpo_mask", "s_grpo_trunc", "ps_ppo")


def build_model(name: str, device: str, dtype: torch.dtype, max_positions: int):
    from transformers import Qwen3Config, Qwen3ForCausalLM

    torch.manual_seed(0)
    config = Qwen3Config(
        **MODELS[name], max_position_embeddings=max_positions, tie_word_embeddings=True, use_cache=False
    )
    config._attn_implementation = "sdpa"
    return Qwen3ForCausalLM(config).to(device=device, dtype=dtype)


def build_trainer(method: str, model, args_common: dict, budget: float, out_dir: str):
    from trl import GRPOConfig

    from countdown_env import Puzzle
    from learners.core.trainer import CountdownGRPOTrainer
    from learners.pipeline.data import prompt_dataset
    from learners.pipeline.models.tiny import build_char_tokenizer
    from learners.ps_ppo import PSPPOConfig, PSPPOTrainer
    from learners.s_grpo import SGRPOConfig, SGRPOTrainer

    dataset = prompt_dataset([Puzzle((1, 2, 3), 6)] * 4, "compact")
    common = dict(args_common, output_dir=out_dir)
    if method == "grpo":
        cls, args = CountdownGRPOTrainer, GRPOConfig(**common)
    elif method.startswith("s_grpo"):
        # Seed 002's multiplication setting: α = 50, k = 100; P = 0.5. Same loss type as the others.
        args = SGRPOConfig(
            **common,
            always_keep_tokens=50,
            max_loss_tokens=100,
            keep_probability=0.5,
            truncate_after_last_selected=method == "s_grpo_trunc",
        )
        cls = SGRPOTrainer
    else:
        cls, args = PSPPOTrainer, PSPPOConfig(**common, budget=budget)
    return cls(
        model=model,
        reward_funcs=lambda prompts, completions, **kw: [0.0] * len(prompts),
        args=args,
        train_dataset=dataset,
        processing_class=build_char_tokenizer(),
    )


def synthetic_rollouts(rows: int, group: int, prompt: int, length: int, vocab: int, device: str, seed: int = 0):
    """A generation batch as TRL hands it to seam 1, plus gathered rewards for the ``Rollout``."""
    gen = torch.Generator().manual_seed(seed)
    rewards = (torch.rand(rows, generator=gen) < 0.5).float().view(-1, group)
    rewards[:, 0], rewards[:, 1] = 1.0, 0.0  # both outcomes in every group
    rewards = rewards.flatten()
    grouped = rewards.view(-1, group)
    advantages = ((grouped - grouped.mean(1, keepdim=True)) / (grouped.std(1, keepdim=True) + 1e-4)).flatten()
    batch = {
        "prompt_ids": torch.randint(10, vocab, (rows, prompt), generator=gen),
        "prompt_mask": torch.ones(rows, prompt, dtype=torch.long),
        "completion_ids": torch.randint(10, vocab, (rows, length), generator=gen),
        "completion_mask": torch.ones(rows, length, dtype=torch.long),
        "advantages": advantages,
    }
    batch = {k: v.to(device) for k, v in batch.items()}
    batch["num_items_in_batch"] = batch["completion_mask"].sum()
    return batch, rewards.to(device)


@contextmanager
def saved_activation_bytes(record: list[int]):
    """Record the bytes of unique storages autograd saves for backward while the context is open."""
    seen: dict[int, int] = {}

    def pack(tensor):
        storage = tensor.untyped_storage()
        seen.setdefault(storage.data_ptr(), storage.nbytes())
        return tensor

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
        yield
    record.append(sum(seen.values()))


def sync(device: str):
    if device == "cuda":
        torch.cuda.synchronize()


def clock(device: str) -> float:
    """Wall clock on CUDA; on CPU this process's CPU time, so that other jobs on a shared machine do not count."""
    return time.perf_counter() if device == "cuda" else time.process_time()


def prepare(trainer, batch, rewards, group: int, device: str):
    """Seam 1 (once per generation batch): returns (shaped batch, seconds)."""
    from learners.core.trainer import Rollout

    rows = batch["completion_ids"].size(0)
    rollout = Rollout(
        rewards=rewards,
        rewards_per_func=rewards.unsqueeze(1),
        num_generations=group,
        process_slice=slice(0, rows),
        inputs=[{}] * rows,
    )
    sync(device)
    start = clock(device)
    work = trainer.shape_batch(dict(batch), rollout)
    trainer.recount_items(work)
    sync(device)
    return work, clock(device) - start


def update(trainer, work, micro_batch: int, device: str):
    """The update stage: loss and backward on every micro-batch; returns (seconds, saved bytes, cuda peak)."""
    model = trainer.model
    rows = work["completion_ids"].size(0)
    model.zero_grad(set_to_none=True)
    if device == "cuda":
        torch.cuda.reset_peak_memory_stats()
    saved: list[int] = []
    sync(device)
    start = clock(device)
    for first in range(0, rows, micro_batch):
        part = {
            k: (v[first : first + micro_batch] if isinstance(v, torch.Tensor) and v.dim() >= 1 else v)
            for k, v in work.items()
        }
        with saved_activation_bytes(saved):
            loss = trainer._compute_loss(model, part)
        loss.backward()
    sync(device)
    seconds = clock(device) - start
    cuda_peak = torch.cuda.max_memory_allocated() if device == "cuda" else 0
    model.zero_grad(set_to_none=True)
    return seconds, max(saved), cuda_peak


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    parser.add_argument("--model", choices=sorted(MODELS), default=None, help="default: cpu-small / qwen3-0.6b")
    parser.add_argument("--lengths", type=int, nargs="+", default=[256, 1024, 4096])
    parser.add_argument("--budget", type=float, default=128.0, help="PS-PPO budget B = E[H]")
    parser.add_argument("--rows", type=int, default=16, help="completions per generation batch")
    parser.add_argument("--group", type=int, default=8, help="completions per prompt (K)")
    parser.add_argument("--micro-batch", type=int, default=8, help="rows per loss call (per_device_train_batch_size)")
    parser.add_argument("--prompt", type=int, default=64, help="prompt tokens")
    parser.add_argument("--repeats", type=int, default=2, help="update stages per method (mean)")
    parser.add_argument(
        "--random-repeats", type=int, default=10, help="PS-PPO update stages (its cost varies with the cutoffs)"
    )
    parser.add_argument("--threads", type=int, default=1, help="CPU threads (CPU time is summed over them)")
    args = parser.parse_args(argv)
    if args.rows % args.group or args.rows % args.micro_batch:
        parser.error("--rows must be a multiple of --group and of --micro-batch")
    if args.device == "cuda" and not torch.cuda.is_available():
        parser.error("--device cuda but torch.cuda.is_available() is False")
    model_name = args.model or ("qwen3-0.6b" if args.device == "cuda" else "cpu-small")
    torch.set_num_threads(args.threads)
    dtype = torch.bfloat16 if args.device == "cuda" else torch.float32

    common = dict(
        use_cpu=args.device == "cpu",
        bf16=args.device == "cuda",
        gradient_checkpointing=False,
        use_vllm=False,
        report_to="none",
        per_device_train_batch_size=args.micro_batch,
        steps_per_generation=args.rows // args.micro_batch,
        num_generations=args.group,
        max_completion_length=max(args.lengths),
        loss_type="dapo",
        beta=0.0,
        seed=0,
        disable_tqdm=True,
    )
    model = build_model(model_name, args.device, dtype, args.prompt + max(args.lengths) + 8)
    vocab = model.config.vocab_size
    params = sum(p.numel() for p in model.parameters())
    print(
        f"model {model_name} ({params / 1e6:.2f} M params, {dtype}), device {args.device}, rows {args.rows} "
        f"(groups of {args.group}), micro-batch {args.micro_batch}, prompt {args.prompt}, budget B={args.budget:g}, "
        f"repeats {args.repeats}"
    )
    with tempfile.TemporaryDirectory() as out_dir:
        trainers = {m: build_trainer(m, model, common, args.budget, out_dir) for m in METHODS}
        for trainer in trainers.values():
            trainer.current_gradient_accumulation_steps = args.rows // args.micro_batch
            trainer.model.train()
        # Warm-up (kernels, allocator) on the shortest length.
        batch, rewards = synthetic_rollouts(args.rows, args.group, args.prompt, min(args.lengths), vocab, args.device)
        for trainer in trainers.values():
            update(trainer, prepare(trainer, batch, rewards, args.group, args.device)[0], args.micro_batch, args.device)

        header = (
            f"{'T':>5} {'method':<13} {'xi s':>7} {'update s':>9} {'x GRPO':>7} {'+xi x GRPO':>11} "
            f"{'act MB':>9} {'x GRPO':>7}"
        )
        if args.device == "cuda":
            header += f" {'peak MB':>9} {'x GRPO':>7}"
        print(header)
        for length in args.lengths:
            batch, rewards = synthetic_rollouts(args.rows, args.group, args.prompt, length, vocab, args.device)
            results = {}
            for method, trainer in trainers.items():
                work, xi = prepare(trainer, batch, rewards, args.group, args.device)
                repeats = max(args.repeats, args.random_repeats) if method == "ps_ppo" else args.repeats
                runs = [update(trainer, work, args.micro_batch, args.device) for _ in range(repeats)]
                results[method] = [xi] + [statistics.mean(column) for column in zip(*runs, strict=True)]
            base = results["grpo"]
            for method, (xi, seconds, act, peak) in results.items():
                line = (
                    f"{length:>5} {method:<13} {xi:>7.3f} {seconds:>9.3f} {seconds / base[1]:>7.2f} "
                    f"{(seconds + xi) / (base[1] + base[0]):>11.2f} {act / 2**20:>9.1f} {act / base[2]:>7.2f}"
                )
                if args.device == "cuda":
                    line += f" {peak / 2**20:>9.0f} {peak / base[3]:>7.2f}"
                print(line, flush=True)


if __name__ == "__main__":
    main()
