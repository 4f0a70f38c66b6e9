"""What seam 1 knows about one generation batch (:class:`Rollout`), and the group statistics every learner shares.

A rollout carries *one* reward total per completion (:func:`weighted_reward_total`, the sum TRL's advantages are
computed from) and *one* verdict per completion (:mod:`learners.core.verdicts`: correct and within the budget),
both computed once by the base trainer and gathered over processes. Learners read them; none recomputes them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch


def weighted_reward_total(rewards_per_func: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    """(N,) ``Σ_f w_f r_f`` over the reward functions that scored each row (TRL's ``nansum``: a function that
    returned ``None`` for a row is left out); NaN where no function of non-zero weight scored it."""
    weights = weights.to(rewards_per_func.device)
    total = (rewards_per_func * weights.unsqueeze(0)).nansum(dim=1)
    weighted = weights != 0
    counted = rewards_per_func[:, weighted] if bool(weighted.any()) else rewards_per_func
    total[torch.isnan(counted).all(dim=1)] = torch.nan
    return total


def groups_all_equal(grouped: torch.Tensor) -> torch.Tensor:
    """(G,) bool: rows of a (G, n) tensor whose finite values all agree (NaN ignored; an all-NaN row counts)."""
    finite = ~torch.isnan(grouped)
    high = torch.where(finite, grouped, torch.full_like(grouped, -torch.inf)).amax(dim=1)
    low = torch.where(finite, grouped, torch.full_like(grouped, torch.inf)).amin(dim=1)
    return (high <= low) | ~finite.any(dim=1)


@dataclass
class Rollout:
    """What seam 1 knows about one generation batch.

    Global tensors cover the rows of every process, concatenated in process order; rows
    ``g*num_generations … (g+1)*num_generations-1`` are the completions of group ``g``.

    Attributes:
        rewards: (N,) total reward of every completion (:func:`weighted_reward_total` of ``rewards_per_func``;
            NaN when no reward function scored it), gathered over processes.
        rewards_per_func: (N, F) the same per reward function.
        num_generations: the group size G (N is a multiple of it).
        process_slice: this process's rows within the N global rows.
        inputs: this process's dataset rows (dicts), as TRL passed them.
        puzzles: the ``Puzzle`` of each local row when the dataset has ``numbers``/``target`` (or, with
            ``environment_factory``, when every rollout's environment has a ``puzzle``), else ``None``.
        trajectories: the env's ``Trajectory`` of each local row (text, verification, truncation, format) when
            the rows carry puzzles, else ``None``: the env reward's own when it scored the batch
            (``env_rewarded``), else scored once after generation.
        verdicts: (N,) float, gathered: 1 for a success (the verifier accepts the answer and it ended within the
            budget), 0 for a failure, NaN for a row without a puzzle (no verdict). ``None`` only for a rollout
            built by hand without them. Read with :meth:`successes`.
        env_rewarded: whether ``trajectories`` are the env reward's (it scored the batch), so their rewards are
            the reward TRL used.
        mode: ``"train"`` or ``"eval"``.
    """

    rewards: torch.Tensor
    rewards_per_func: torch.Tensor
    num_generations: int
    process_slice: slice
    inputs: list[dict[str, Any]]
    puzzles: list[Any] | None = None
    trajectories: list[Any] | None = None
    verdicts: torch.Tensor | None = None
    env_rewarded: bool = False
    mode: str = "train"

    @property
    def num_groups(self) -> int:
        return self.rewards.numel() // self.num_generations

    def grouped(self, values: torch.Tensor) -> torch.Tensor:
        """Reshape a gathered (N, ...) tensor to (N/G, G, ...)."""
        return values.reshape(-1, self.num_generations, *values.shape[1:])

    def local(self, values: torch.Tensor | Sequence, width: int | None = None):
        """This process's rows of a gathered (N, ...) tensor or list; ``width`` trims padded columns."""
        rows = values[self.process_slice]
        if width is not None and isinstance(rows, torch.Tensor) and rows.dim() > 1:
            rows = rows[:, :width]
        return rows

    @property
    def local_rewards(self) -> torch.Tensor:
        return self.rewards[self.process_slice]

    @property
    def group_index(self) -> torch.Tensor:
        """(B,) the global group number of each local row."""
        start = self.process_slice.start
        rows = torch.arange(start, start + len(self.inputs), device=self.rewards.device)
        return rows // self.num_generations

    def homogeneous_groups(self) -> torch.Tensor:
        """(N/G,) bool: groups whose rewards all agree (NaN rewards ignored; an all-NaN group counts)."""
        return groups_all_equal(self.grouped(self.rewards))

    def successes(self, fallback: torch.Tensor | None = None) -> torch.Tensor:
        """(N,) bool on the rewards' device: the verdict where a row has one; elsewhere ``fallback`` (an (N,) bool
        tensor, e.g. a learner's documented binarisation of the reward), or False without one."""
        device = self.rewards.device
        verdicts = self.verdicts if self.verdicts is not None else torch.full_like(self.rewards, torch.nan)
        verdicts = verdicts.to(device)
        known = ~torch.isnan(verdicts)
        if fallback is None:
            fallback = torch.zeros_like(known)
        return torch.where(known, verdicts == 1, fallback.to(device).bool())


def puzzles_from_inputs(inputs: Sequence[dict[str, Any]]) -> list[Any] | None:
    """The ``Puzzle`` of each dataset row with ``numbers`` (or ``nums``) and ``target``, or ``None`` when a column
    is missing."""
    if not inputs or not ({"numbers", "nums"} & set(inputs[0])) or "target" not in inputs[0]:
        return None
    from countdown_env import Puzzle

    return [Puzzle.from_dict(row) for row in inputs]
