"""Which completions of a rollout are correct: the verifier's verdict, never a reward threshold.

A learner's reward functions may shape the reward (DAPO's overlong penalty, a format bonus, a learner's own
terms), so "total reward >= 1" is not "correct": a correct answer cut by an overlong penalty scores below 1 and a
wrong one with a large format bonus above it. The verdicts come from where the base trainer's
``countdown/accuracy`` takes them (:meth:`learners.core.trainer.CountdownGRPOTrainer._log_rollout_metrics`):

1. the env's :class:`~countdown_env.trajectory.Trajectory` of each row when the env reward scored the batch
   (``rollout.trajectories``);
2. else, when the rows carry puzzles (``numbers``/``target`` columns, or an environment's ``puzzle``), the task's
   verifier on each completion (``trainer.score_completions``: the task's tags and rules, the trainer's budget and
   stop ids);
3. else there is no verdict (a dataset that is not Countdown's): ``fallback`` decides, and only for those rows.

A row is a success when its verification is correct and it ended within the budget (``not truncated``): a
completion cut at ``max_completion_length`` counts as wrong, as in ``countdown eval`` and in the env reward (which
pays a truncated completion 0). With the env reward and no format bonus a success is then exactly a reward of 1.

:func:`rollout_successes` is collective (every process calls it once per batch): verdicts are gathered in the
order of ``rollout.rewards``.
"""

from __future__ import annotations

from typing import Any

import torch


def local_verdicts(trainer: Any, batch: dict[str, Any], rollout: Any) -> list[bool] | None:
    """Per row of this process: correct and not truncated (see the module doc); ``None`` when the rows carry no
    puzzle."""
    trajectories = rollout.trajectories
    if trajectories is None and rollout.puzzles is not None:
        rows = zip(batch["completion_ids"], batch["completion_mask"], strict=True)
        trajectories = trainer.score_completions(rollout.puzzles, [ids[mask.bool()].tolist() for ids, mask in rows])
    if trajectories is None:
        return None
    return [bool(t.verification.correct) and not t.truncated for t in trajectories]


def rollout_successes(
    trainer: Any, batch: dict[str, Any], rollout: Any, fallback: torch.Tensor | None = None
) -> torch.Tensor:
    """(N,) bool over every process's rows, in the order of ``rollout.rewards``: the verifier's verdict where the
    rows carry puzzles; elsewhere ``fallback`` (an (N,) bool tensor, e.g. a learner's documented binarisation of
    the reward), or False without one. Collective: one gather."""
    device = batch["completion_ids"].device
    rows = batch["completion_ids"].size(0)
    verdicts = local_verdicts(trainer, batch, rollout)
    local = torch.zeros(rows, 2, device=device)  # (correct, has a verdict)
    if verdicts is not None:
        local[:, 0] = torch.tensor(verdicts, dtype=torch.float32, device=device)
        local[:, 1] = 1.0
    gathered = trainer.gather_rows(local)
    correct, known = gathered[:, 0].bool(), gathered[:, 1].bool()
    if fallback is None:
        return correct & known
    return torch.where(known, correct, fallback.to(known.device).bool())
