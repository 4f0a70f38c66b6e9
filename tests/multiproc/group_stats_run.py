"""Run two GRPO steps of the tiny model and dump, per local row, the group statistics seam 1 computes.

Launched by test_group_stats_two_processes.py, once as a plain process and once under
``accelerate launch --multi_gpu --num_processes 2`` on a machine without CUDA (torchrun + gloo; TRL's
``use_cpu=True`` makes it MULTI_CPU — ``accelerate launch --cpu`` with several processes needs MPI).
Completions come from a deterministic ``rollout_func`` that depends only on the prompt and the row's *global*
index, so both runs see identical batches and must agree on every group statistic; a learner that forgot to
gather would see half groups under two processes.

Usage: python group_stats_run.py MODEL_DIR OUT_DIR
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")

PUZZLES = [((3, 7, 11), 21), ((2, 5, 9), 19), ((4, 6, 8), 32), ((1, 3, 5), 15)]
GLOBAL_BATCH = 12  # 3 groups of 4: under 2 processes the middle group is split 2 + 2
NUM_GENERATIONS = 4


def rollout(prompts, trainer):
    tok = trainer.processing_class
    rank, local = trainer.accelerator.process_index, len(prompts)
    prompt_ids, completion_ids = [], []
    for i, prompt in enumerate(prompts):
        ids = tok.apply_chat_template(prompt, tokenize=True, add_generation_prompt=True)
        ids = list(ids["input_ids"] if hasattr(ids, "keys") else ids)
        row = rank * local + i  # global row: identical in both runs
        n = 1 + (row * 7 + trainer.state.global_step * 3 + len(ids)) % 5
        prompt_ids.append(ids)
        completion_ids.append(tok.encode("x" * n, add_special_tokens=False) + [tok.eos_token_id])
    return {"prompt_ids": prompt_ids, "completion_ids": completion_ids, "logprobs": None}


def reward(completions, **kwargs):
    return [float(len(c[0]["content"]) % 3) for c in completions]


def main(model_dir: str, out_dir: str) -> None:
    import torch
    from transformers import AutoModelForCausalLM
    from trl import GRPOConfig

    from countdown_env import Puzzle
    from learners.base import CountdownGRPOTrainer
    from learners.data import prompt_dataset
    from learners.tiny import load_tokenizer

    class Probe(CountdownGRPOTrainer):
        def shape_batch(self, batch, rollout):
            b, t = batch["completion_mask"].shape
            lengths = self.gather_rows(batch["completion_mask"]).sum(dim=1).float()  # (N,)
            mask_back = rollout.local(self.gather_rows(batch["completion_mask"]), width=t)
            assert torch.equal(mask_back, batch["completion_mask"])
            grouped = rollout.grouped(rollout.rewards)
            mean, std = grouped.mean(dim=1), grouped.std(dim=1)
            group_tokens = rollout.grouped(lengths).sum(dim=1)
            homogeneous = rollout.homogeneous_groups()
            g = rollout.group_index
            rank = self.accelerator.process_index
            with open(Path(out_dir) / f"rows-{rank}.jsonl", "a") as f:
                for i in range(b):
                    row = {
                        "step": self.state.global_step,
                        "row": rollout.process_slice.start + i,
                        "group": int(g[i]),
                        "numbers": list(rollout.inputs[i]["numbers"]),
                        "reward": float(rollout.local_rewards[i]),
                        "length": int(batch["completion_mask"][i].sum()),
                        "group_mean": float(mean[g[i]]),
                        "group_std": float(std[g[i]]),
                        "group_tokens": float(group_tokens[g[i]]),
                        "homogeneous": bool(homogeneous[g[i]]),
                        "advantage": float(batch["advantages"][i]),
                        "processes": self.accelerator.num_processes,
                        "distributed_type": str(self.accelerator.distributed_type),
                    }
                    f.write(json.dumps(row) + "\n")
            return batch

    n_proc = int(os.environ.get("WORLD_SIZE", "1"))
    args = GRPOConfig(
        output_dir=str(Path(out_dir) / "trainer"),
        use_cpu=True,
        bf16=False,
        gradient_checkpointing=False,
        use_vllm=False,
        report_to="none",
        per_device_train_batch_size=GLOBAL_BATCH // n_proc,
        num_generations=NUM_GENERATIONS,
        max_completion_length=8,
        max_steps=2,
        learning_rate=1e-3,
        logging_steps=1,
        save_strategy="no",
        seed=0,
        disable_tqdm=True,
        dataloader_num_workers=0,
    )
    trainer = Probe(
        model=AutoModelForCausalLM.from_pretrained(model_dir),
        reward_funcs=reward,
        args=args,
        train_dataset=prompt_dataset([Puzzle(n, t) for n, t in PUZZLES], "compact"),
        processing_class=load_tokenizer(model_dir),
        rollout_func=rollout,
    )
    trainer.train()


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    main(sys.argv[1], sys.argv[2])
