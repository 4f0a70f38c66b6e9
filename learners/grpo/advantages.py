r"""Advantage estimators other than TRL's group-relative one, for seam 1 (``advantage_estimator``).

Both take the *gathered* rewards of the generation batch, ``N`` rows in group order (``G`` rows per prompt), with
NaN for a completion no reward function scored (TRL's convention), and return ``N`` advantages with 0 for those.

``rloo`` (RLOO, Ahmadian et al. 2024, "Back to Basics", arXiv 2402.14740): each completion's baseline is the mean
reward of the *other* completions of its group,

.. math:: A_i = r_i - \frac{1}{G-1}\sum_{j \ne i} r_j = \frac{G}{G-1}\,(r_i - \bar r),

over the scorable siblings only (TRL's ``RLOOTrainer`` does the same); a group with one scorable completion gives 0.

``reinforce_pp_baseline`` (REINFORCE++-baseline, Hu et al. 2025, arXiv 2501.03262, as OpenRLHF implements it): the
group mean is subtracted, :math:`A'_i = r_i - \bar r_{group}`, then the advantages are whitened over the batch at
the token level: every loss token of row ``i`` carries :math:`A'_i`, and

.. math:: A_i = \frac{A'_i - \mu}{\sqrt{\max(\sigma^2, 10^{-8})}}, \quad
          \mu = \frac{\sum_i n_i A'_i}{\sum_i n_i}, \quad \sigma^2 = \frac{\sum_i n_i (A'_i - \mu)^2}{\sum_i n_i},

with :math:`n_i` the loss tokens of row ``i`` (OpenRLHF's ``masked_normalize``; rows without a reward or without
loss tokens are left out of μ and σ).
"""

from __future__ import annotations

from collections.abc import Callable

import torch

WHITENING_EPS = 1e-8


def leave_one_out_advantages(rewards: torch.Tensor, group_size: int, loss_tokens: torch.Tensor | None = None):
    """(N,) RLOO advantages of (N,) gathered rewards in groups of ``group_size`` (see the module docstring); the
    rows' loss tokens play no part."""
    grouped = rewards.reshape(-1, group_size)
    scorable = ~torch.isnan(grouped)
    count = scorable.sum(dim=1, keepdim=True)
    total = torch.nansum(grouped, dim=1, keepdim=True)
    baseline = (total - grouped) / (count - 1)  # 0/0 = NaN for a lone scorable row; NaN rows stay NaN
    return torch.nan_to_num(grouped - baseline, nan=0.0, posinf=0.0, neginf=0.0).reshape(-1)


def reinforce_pp_baseline_advantages(rewards: torch.Tensor, group_size: int, loss_tokens: torch.Tensor) -> torch.Tensor:
    """(N,) REINFORCE++-baseline advantages of (N,) gathered rewards, whitened with each row weighted by its
    ``loss_tokens`` (N,) (see the module docstring)."""
    grouped = rewards.reshape(-1, group_size)
    centered = (grouped - torch.nanmean(grouped, dim=1, keepdim=True)).reshape(-1)
    weights = torch.where(torch.isnan(centered), torch.zeros_like(centered), loss_tokens.to(centered.dtype))
    values = torch.nan_to_num(centered, nan=0.0)
    total = weights.sum()
    if total <= 0:
        return torch.zeros_like(values)
    mean = (weights * values).sum() / total
    variance = (weights * (values - mean) ** 2).sum() / total
    whitened = (values - mean) * torch.rsqrt(variance.clamp(min=WHITENING_EPS))
    return torch.where(weights > 0, whitened, torch.zeros_like(whitened))


Estimator = Callable[[torch.Tensor, int, torch.Tensor], torch.Tensor]
ESTIMATORS: dict[str, Estimator | None] = {
    "group": None,
    "rloo": leave_one_out_advantages,
    "reinforce_pp_baseline": reinforce_pp_baseline_advantages,
}
"""``advantage_estimator`` -> ``f(gathered rewards, group size, gathered loss tokens per row) -> advantages``;
``group`` (``None``) keeps TRL's own advantage (``scale_rewards`` decides its scaling). A new estimator is one function
and one entry here (a learner that uses it is a preset in :mod:`learners.grpo.presets`)."""
