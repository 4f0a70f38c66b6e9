"""Which completions of a rollout are correct: the verifier's verdict, never a reward threshold. One rule, applied
once per completion by the base trainer (:meth:`learners.core.trainer.CountdownGRPOTrainer.make_rollout`) and read
by every consumer as ``rollout.verdicts`` / :meth:`~learners.core.rollout.Rollout.successes`: the logged
``countdown/accuracy``, DAPO's dynamic sampling, PS-PPO's success indicator, T-SPMO's replay buffer and the
contrastive answer bank.

A learner's reward functions may shape the reward (DAPO's overlong penalty, a format bonus, a learner's own
terms), so "total reward >= 1" is not "correct": a correct answer cut by an overlong penalty scores below 1 and a
wrong one with a large format bonus above it. The verdicts come from

1. the env's :class:`~countdown_env.trajectory.Trajectory` of each row when the env reward scored the batch;
2. else, when the rows carry puzzles (``numbers``/``target`` columns, or an environment's ``puzzle``), the task's
   verifier on each completion (:func:`scored_trajectories`: ``trainer.score_completions``, the task's tags and
   rules, the trainer's budget and stop ids);
3. else there is no verdict (a dataset that is not Countdown's): NaN, and a consumer's documented fallback decides,
   only for those rows.

A row is a success when its verification is correct and it ended within the budget (``not truncated``): a
completion cut at ``max_completion_length`` counts as wrong, as in ``countdown eval`` and in the env reward (which
pays a truncated completion 0). With the env reward and no format bonus a success is then exactly a reward of 1.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch


def scored_trajectories(trainer: Any, batch: dict[str, Any], puzzles: Sequence[Any] | None) -> list[Any] | None:
    """The env's trajectory of each local row (its completion as the mask keeps it), or ``None`` without puzzles."""
    if puzzles is None:
        return None
    rows = zip(batch["completion_ids"], batch["completion_mask"], strict=True)
    return trainer.score_completions(puzzles, [ids[mask.bool()].tolist() for ids, mask in rows])


def success(trajectory: Any) -> bool:
    """The rule: the verifier accepts the answer and the completion ended within the budget."""
    return bool(trajectory.verification.correct) and not trajectory.truncated


def gathered_verdicts(trainer: Any, trajectories: Sequence[Any] | None, rows: int, device: Any) -> torch.Tensor:
    """(N,) float over every process's rows, in process order: 1 success, 0 failure, NaN where a process's rows
    carry no puzzle. Collective: every process calls it once per batch (one gather)."""
    local = torch.full((rows,), torch.nan, device=device)
    if trajectories is not None:
        local = torch.tensor([float(success(t)) for t in trajectories], device=device)
    return trainer.gather_rows(local)
