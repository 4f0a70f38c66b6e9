"""Two PS-PPO steps of the tiny model; dump each global row's survival function ξ computed in seam 1.

Launched by test_ps_ppo_two_processes.py once as a plain process and once under 2 processes (torchrun + gloo),
with the deterministic rollout of probe_worker.py (completions depend only on the prompt and the global row), so
both runs see identical groups, one of them split across the two ranks. ξ needs every row of a group (score-norm
proxy and the success/failure next-token distributions), so a learner that forgot to gather would compute a
different ξ under two processes.

Usage: python ps_ppo_survival_run.py MODEL_DIR OUT_DIR
"""

from __future__ import annotations

import sys
from pathlib import Path

from probe_worker import answering_rollout, append_rows, exit_at_once, train


def main(model_dir: str, out_dir: str) -> None:
    from learners.ps_ppo import PSPPOConfig, PSPPOTrainer

    class Probe(PSPPOTrainer):
        def shape_batch(self, batch, rollout_info):
            batch = super().shape_batch(batch, rollout_info)
            lengths = batch["completion_mask"].sum(dim=1)
            rows = [
                {
                    "step": self.state.global_step,
                    "row": rollout_info.process_slice.start + i,
                    "reward": float(rollout_info.local_rewards[i]),
                    "survival": batch["cutoff_survival"][i, : int(lengths[i])].tolist(),
                    "processes": self.accelerator.num_processes,
                }
                for i in range(lengths.numel())
            ]
            append_rows(out_dir, self.accelerator.process_index, rows)
            return batch

    # learning rate 0: both steps see the same weights, so ξ must match to float precision; PS-PPO's successes are
    # the verifier's verdicts (not the length reward), so the rollout answers some rows correctly: mixed groups
    train(Probe, PSPPOConfig, model_dir, out_dir, rollout_func=answering_rollout, learning_rate=0.0, budget=2.0)


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    main(sys.argv[1], sys.argv[2])
    exit_at_once()  # no teardown race at exit (probe_worker.exit_at_once)
