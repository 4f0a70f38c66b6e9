"""Run two GRPO steps of the tiny model and dump, per local row, the group statistics seam 1 computes.

Launched by test_group_stats_two_processes.py, once as a plain process and once under two processes, with the
deterministic rollout of probe_worker.py: both runs see identical batches and must agree on every group
statistic; a learner that forgot to gather would see half groups under two processes.

Usage: python group_stats_run.py MODEL_DIR OUT_DIR
"""

from __future__ import annotations

import sys
from pathlib import Path

from probe_worker import append_rows, exit_at_once, train


def main(model_dir: str, out_dir: str) -> None:
    import torch
    from trl import GRPOConfig

    from learners.core.trainer import CountdownGRPOTrainer

    class Probe(CountdownGRPOTrainer):
        def shape_batch(self, batch, rollout):
            b, t = batch["completion_mask"].shape
            gathered_mask = self.gather_rows(batch["completion_mask"])
            lengths = gathered_mask.sum(dim=1).float()  # (N,)
            mask_back = rollout.local(gathered_mask, width=t)
            assert torch.equal(mask_back, batch["completion_mask"])
            grouped = rollout.grouped(rollout.rewards)
            mean, std = grouped.mean(dim=1), grouped.std(dim=1)
            group_tokens = rollout.grouped(lengths).sum(dim=1)
            homogeneous = rollout.homogeneous_groups()
            g = rollout.group_index
            rows = [
                {
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
                for i in range(b)
            ]
            append_rows(out_dir, self.accelerator.process_index, rows)
            return batch

    train(Probe, GRPOConfig, model_dir, out_dir)


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    main(sys.argv[1], sys.argv[2])
    exit_at_once()  # no teardown race at exit (probe_worker.exit_at_once)
