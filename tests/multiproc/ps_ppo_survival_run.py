"""Two PS-PPO steps of the tiny model; dump each global row's survival function ξ computed in seam 1.

Launched by test_ps_ppo_two_processes.py once as a plain process and once under 2 processes (torchrun + gloo),
with the deterministic ``rollout`` of group_stats_run.py (completions depend only on the prompt and the global
row), so both runs see identical groups, one of them split across the two ranks. ξ needs every row of a group
(score-norm proxy and the success/failure next-token distributions), so a learner that forgot to gather would
compute a different ξ under two processes.

Usage: python ps_ppo_survival_run.py MODEL_DIR OUT_DIR
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")

from group_stats_run import GLOBAL_BATCH, NUM_GENERATIONS, PUZZLES, reward, rollout  # noqa: E402


def main(model_dir: str, out_dir: str) -> None:
    from transformers import AutoModelForCausalLM

    from countdown_env import Puzzle
    from learners.data import prompt_dataset
    from learners.ps_ppo import PSPPOConfig, PSPPOTrainer
    from learners.tiny import load_tokenizer

    class Probe(PSPPOTrainer):
        def shape_batch(self, batch, rollout_info):
            batch = super().shape_batch(batch, rollout_info)
            rank = self.accelerator.process_index
            lengths = batch["completion_mask"].sum(dim=1)
            with open(Path(out_dir) / f"rows-{rank}.jsonl", "a") as f:
                for i in range(lengths.numel()):
                    row = {
                        "step": self.state.global_step,
                        "row": rollout_info.process_slice.start + i,
                        "reward": float(rollout_info.local_rewards[i]),
                        "survival": batch["cutoff_survival"][i, : int(lengths[i])].tolist(),
                        "processes": self.accelerator.num_processes,
                    }
                    f.write(json.dumps(row) + "\n")
            return batch

    n_proc = int(os.environ.get("WORLD_SIZE", "1"))
    args = PSPPOConfig(
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
        learning_rate=0.0,  # both steps see the same weights: ξ must match to float precision
        logging_steps=1,
        save_strategy="no",
        seed=0,
        disable_tqdm=True,
        dataloader_num_workers=0,
        budget=2.0,
        success_threshold=1.0,
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
