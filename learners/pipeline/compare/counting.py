"""What a run costs, counted without changing anything a learner computes: :class:`Tally` (the cumulative counters
of ``results.csv``) and :func:`instrumented` (the learner's trainer subclass that feeds it)."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math


@dataclasses.dataclass
class Tally:
    """Cumulative counters of one run (snapshotted into every checkpoint for ``--resume``)."""

    wall_seconds: float = 0.0
    generated_tokens: int = 0
    loss_tokens: int = 0
    forward_tokens: float = 0.0
    reward_sum: float = 0.0  # since the previous eval row
    reward_count: int = 0
    prompt_digest: str = ""  # chained sha256 of the puzzles of every generation batch (same prompts <=> same)

    def see_rollout(self, generated_tokens: int, rewards: list[float], puzzles: list[list]) -> None:
        """Count one generation batch: its completion tokens, its rewards (NaN: not scored) and its puzzles
        (``[numbers, target]`` per row, in the gathered row order), all of every process."""
        self.generated_tokens += int(generated_tokens)
        finite = [r for r in rewards if not math.isnan(r)]
        self.reward_sum += sum(finite)
        self.reward_count += len(finite)
        text = self.prompt_digest + json.dumps(puzzles, separators=(",", ":"))
        self.prompt_digest = hashlib.sha256(text.encode()).hexdigest()

    def take_reward(self) -> float:
        """Mean train reward since the last call (NaN when nothing was generated), and reset the window."""
        value = self.reward_sum / self.reward_count if self.reward_count else math.nan
        self.reward_sum, self.reward_count = 0.0, 0
        return value


def instrumented(trainer_class: type) -> type:
    """A subclass of a learner's trainer that counts, without changing anything it computes, what each step
    generated (seam 1) and, after every loss call, the base trainer's record of it
    (:class:`~learners.core.trainer.LossCall`: the tokens its loss used and the completion columns its forward ran).
    Under several processes the counts are summed over them (every process calls seam 1 and the loss equally often),
    so the tally is the run's on every process."""

    class Instrumented(trainer_class):
        compare_tally: Tally

        def _summed(self, *values: float) -> list[float]:
            """``values`` summed over the processes (collective: every process calls it at the same point)."""
            import torch

            local = torch.tensor([values], dtype=torch.float64, device=self.accelerator.device)
            return self.accelerator.gather(local).sum(dim=0).tolist()

        def shape_batch(self, batch, rollout):
            if rollout.mode == "train":
                import torch
                from accelerate.utils import gather_object

                if rollout.env_rewarded:  # the env's trajectory lengths (eos included) and rewards
                    trajectories = rollout.trajectories
                    local_tokens = sum(len(t.completion_ids) for t in trajectories)
                    local_rewards = torch.tensor([float(t.reward) for t in trajectories], dtype=torch.float64)
                else:
                    local_tokens = int(batch["completion_mask"].sum())
                    local_rewards = rollout.local_rewards.to(torch.float64)
                (tokens,) = self._summed(local_tokens)
                rewards = self.accelerator.gather(local_rewards.to(self.accelerator.device)).tolist()
                puzzles = [[list(map(int, row["numbers"])), int(row["target"])] for row in rollout.inputs]
                if self.accelerator.num_processes > 1:
                    puzzles = gather_object(puzzles)  # in process order: the gathered row order
                self.compare_tally.see_rollout(round(tokens), rewards, puzzles)
            return super().shape_batch(batch, rollout)

        def _compute_loss(self, model, inputs):
            loss = super()._compute_loss(model, inputs)
            if self.model.training and self.last_loss_call is not None:
                call = self.last_loss_call
                loss_tokens, forward_tokens = self._summed(int(call.loss_tokens), call.forward_tokens)
                self.compare_tally.loss_tokens += round(loss_tokens)
                self.compare_tally.forward_tokens += forward_tokens
            return loss

    Instrumented.__name__ = Instrumented.__qualname__ = f"Compare{trainer_class.__name__}"
    return Instrumented
