"""What a run costs, counted without changing anything a learner computes: :class:`Tally` (the cumulative counters
of ``results.csv``) and :func:`instrumented` (the learner's trainer subclass that feeds it)."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
from collections.abc import Mapping
from typing import Any


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

    def see_rollout(self, batch: Mapping[str, Any], rollout) -> None:
        trajectories = rollout.trajectories
        if trajectories is not None:
            self.generated_tokens += sum(len(t.completion_ids) for t in trajectories)
            rewards = [float(t.reward) for t in trajectories]
        else:
            self.generated_tokens += int(batch["completion_mask"].sum())
            rewards = [float(r) for r in rollout.local_rewards.tolist()]
        finite = [r for r in rewards if not math.isnan(r)]
        self.reward_sum += sum(finite)
        self.reward_count += len(finite)
        puzzles = [[list(map(int, row["numbers"])), int(row["target"])] for row in rollout.inputs]
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
    (:class:`~learners.core.trainer.LossCall`: the tokens its loss used and the completion columns its forward ran)."""

    class Instrumented(trainer_class):
        compare_tally: Tally

        def shape_batch(self, batch, rollout):
            if rollout.mode == "train":
                self.compare_tally.see_rollout(batch, rollout)
            return super().shape_batch(batch, rollout)

        def _compute_loss(self, model, inputs):
            loss = super()._compute_loss(model, inputs)
            if self.model.training and self.last_loss_call is not None:
                self.compare_tally.loss_tokens += int(self.last_loss_call.loss_tokens)
                self.compare_tally.forward_tokens += self.last_loss_call.forward_tokens
            return loss

    Instrumented.__name__ = Instrumented.__qualname__ = f"Compare{trainer_class.__name__}"
    return Instrumented
