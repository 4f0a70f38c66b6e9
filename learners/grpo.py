r"""GRPO and its variants as presets of one learner: GRPO, Dr.GRPO, DAPO and prime-rl's default loss (seed 000).

All presets share TRL's group-relative advantage on the group of G completions of a prompt,

.. math:: A_i = \frac{r_i - \operatorname{mean}(r_{1..G})}{\operatorname{std}(r_{1..G}) + 10^{-4}}
          \quad\text{(or without the division when } \texttt{scale\_rewards="none"}),

and TRL's clipped surrogate per token, :math:`-\min(\rho_t A, \operatorname{clip}(\rho_t, 1-\varepsilon_{lo},
1+\varepsilon_{hi}) A)` with :math:`\rho_t = \pi_\theta(y_t)/\pi_{old}(y_t)`. What each preset sets
(:data:`PRESETS`, applied by :func:`grpo_config`; any keyword given explicitly wins):

``grpo``
    ``loss_type="grpo"`` (mean over each sequence's tokens, then over sequences), ``scale_rewards="group"``,
    ``epsilon=0.2``, ``beta=0``.
``dr_grpo`` (Liu et al. 2025, "Understanding R1-Zero-like training")
    ``loss_type="dr_grpo"`` (token sum divided by the constant ``B * max_completion_length``: no length
    bias), ``scale_rewards="none"`` (no std division: no difficulty bias), ``epsilon=0.2``, ``beta=0``.
``dapo`` (Yu et al. 2025)
    clip-higher ``epsilon=0.2, epsilon_high=0.28``; token-level loss ``loss_type="dapo"`` (sum over all tokens
    of the batch / their count); overlong reward shaping: TRL's soft overlong punishment (DAPO Eq. 13) added as
    a second reward function with a buffer of ``overlong_buffer_fraction`` (0.25) of ``max_completion_length``;
    dynamic sampling: ``dynamic_sampling=True`` (below); ``scale_rewards="group"``, ``beta=0``.
``prime_rl`` (seed 000: prime-rl's default "DPPO policy-gradient term combined with a KL regularizer")
    .. math:: \mathcal L = -\frac{1}{\sum|y|}\sum_t m_t\,\rho_t A
              \;+\; \tau_{KL}\frac{1}{\sum|y|}\sum_t m_t \log^2\rho_t,
              \qquad \rho_t = \pi_\theta(y_t)/\mu(y_t),\quad m_t = [1-0.2 \le \rho_t \le 1+0.2]

    with μ the inference (sampling) policy: vLLM's log-probs when TRL has them, else TRL's
    ``old_per_token_logps``. ``dppo_mask_low = dppo_mask_high = 0.2``, ``kl_tau = 1e-3``,
    ``loss_type="dapo"`` (the 1/Σ|y| normaliser; masked tokens still count in it), ``scale_rewards="none"``,
    ``epsilon = epsilon_high = 0.2`` (so TRL's clip never binds on an unmasked token),
    ``vllm_importance_sampling_correction=False`` (μ already enters ρ). The seed's δ cap of ρ is not
    needed: unmasked ρ ≤ 1.2. On-policy single-iteration runs without vLLM have ρ ≡ 1 (TRL then does not
    even compute π_old), where the preset reduces to token-level GRPO without std scaling.

How the extras are implemented, through the two seams of :mod:`learners.base` only:

* Dynamic sampling (seam 1). DAPO over-samples prompts and keeps only groups whose rewards are not all equal.
  Refilling the batch would mean generating again inside TRL's ``_generate``, which the seams exclude. Policy
  here: **filter, no refill** — the loss mask of every homogeneous group is set to zero, and the token
  normaliser (``num_items_in_batch``) is recounted over the kept tokens, so each kept token weighs exactly as
  in a batch made of kept groups only. A batch with no informative group gives a zero loss (logged as
  ``countdown/dynamic_sampling_kept_frac`` = 0). To keep the effective batch size, raise
  ``per_device_train_batch_size`` by 1/kept-fraction.
* DPPO mask and squared-log-ratio KL (seam 2). ρ is computed on the micro-batch with one extra no-grad forward
  pass (only when π_old or μ exists). Masked tokens leave the loss mask. The KL term enters as a per-token
  advantage :math:`A'_t = A - 2\tau\log\rho_t/\rho_t` (detached), whose surrogate :math:`\rho_t A'_t` has
  exactly the gradient :math:`\nabla(\rho_t A - \tau\log^2\rho_t)` (the logged loss value is the surrogate's).
  The no-grad pass equals the loss's forward pass only without dropout (Qwen models have none).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

import torch
from trl import GRPOConfig

from .base import CountdownGRPOTrainer, Rollout
from .grpo_presets import PRESETS


@dataclass
class GRPOLearnerConfig(GRPOConfig):
    """``GRPOConfig`` plus the switches the presets need (all off by default: plain TRL GRPO).

    Parameters:
        dynamic_sampling: zero the loss of groups whose rewards all agree (DAPO; filter without refill).
        overlong_buffer_fraction: DAPO soft overlong punishment buffer, as a fraction of
            ``max_completion_length`` (0 = off).
        overlong_penalty_weight: weight of the overlong reward term.
        dppo_mask_low, dppo_mask_high: mask tokens whose ratio π/μ leaves [1-low, 1+high] (``None`` = off).
        kl_tau: weight τ of the squared-log-ratio penalty τ·log²(π/μ) (0 = off).
    """

    dynamic_sampling: bool = field(default=False, metadata={"help": "DAPO dynamic sampling (filter, no refill)."})
    overlong_buffer_fraction: float = field(default=0.0, metadata={"help": "DAPO overlong buffer / max length."})
    overlong_penalty_weight: float = field(default=1.0, metadata={"help": "Weight of the overlong reward."})
    dppo_mask_low: float | None = field(default=None, metadata={"help": "Mask tokens with ratio < 1 - low."})
    dppo_mask_high: float | None = field(default=None, metadata={"help": "Mask tokens with ratio > 1 + high."})
    kl_tau: float = field(default=0.0, metadata={"help": "Squared-log-ratio KL weight (prime-rl kl_tau)."})

    def __post_init__(self):
        super().__post_init__()
        if not 0.0 <= self.overlong_buffer_fraction < 1.0:
            raise ValueError(f"overlong_buffer_fraction must be in [0, 1), got {self.overlong_buffer_fraction}")
        if self.kl_tau < 0:
            raise ValueError(f"kl_tau must be >= 0, got {self.kl_tau}")
        for name in ("dppo_mask_low", "dppo_mask_high"):
            value = getattr(self, name)
            if value is not None and value <= 0:
                raise ValueError(f"{name} must be > 0 or None, got {value}")
        if (self.dppo_mask_low is None) != (self.dppo_mask_high is None):
            raise ValueError("set both dppo_mask_low and dppo_mask_high, or neither")
        if self.dppo_mask_low is not None and (
            self.epsilon < self.dppo_mask_low or self.epsilon_high < self.dppo_mask_high
        ):
            raise ValueError(
                "with DPPO masking, epsilon/epsilon_high must be >= dppo_mask_low/high so that TRL's clip "
                f"never binds on an unmasked token (got epsilon={self.epsilon}, epsilon_high={self.epsilon_high})"
            )

    @property
    def uses_ratio_terms(self) -> bool:
        return self.dppo_mask_low is not None or self.kl_tau > 0


def grpo_config(preset: str = "grpo", **kwargs: Any) -> GRPOLearnerConfig:
    """A :class:`GRPOLearnerConfig` with ``PRESETS[preset]`` applied, then ``kwargs`` (which win)."""
    if preset not in PRESETS:
        raise ValueError(f"unknown GRPO preset {preset!r}; choose one of {sorted(PRESETS)}")
    return GRPOLearnerConfig(**{**PRESETS[preset], **kwargs})


def dppo_keep_mask(log_ratio: torch.Tensor, low: float, high: float) -> torch.Tensor:
    """(B,T) bool: tokens whose ratio exp(log_ratio) lies in [1-low, 1+high] (NaN ratios are dropped)."""
    ratio = torch.exp(log_ratio)
    return (ratio >= 1.0 - low) & (ratio <= 1.0 + high)


def kl_adjusted_advantages(advantages: torch.Tensor, log_ratio: torch.Tensor, tau: float) -> torch.Tensor:
    """(B,T) A' = A - 2τ·log ρ / ρ: the surrogate ρ·A' (A' detached) has the gradient of ρ·A - τ·log²ρ."""
    if advantages.dim() == 1:
        advantages = advantages.unsqueeze(1)
    log_ratio = torch.nan_to_num(log_ratio.detach(), nan=0.0)
    return advantages - 2.0 * tau * log_ratio * torch.exp(-log_ratio)


class GRPOLearner(CountdownGRPOTrainer):
    """GRPO / Dr.GRPO / DAPO / prime-rl loss on Countdown (see the module docstring for the equations).

    Use with a :class:`GRPOLearnerConfig` (e.g. from :func:`grpo_config`); a plain ``GRPOConfig`` gives plain
    GRPO. Only the seams differ from :class:`~learners.base.CountdownGRPOTrainer`: dynamic sampling in
    ``shape_batch``, DPPO masking and the squared-log-ratio KL in ``select_loss_tokens``.
    """

    def __init__(self, model, reward_funcs=None, args=None, *trainer_args, **trainer_kwargs):
        fraction = getattr(args, "overlong_buffer_fraction", 0.0)
        if fraction > 0:
            from trl.rewards import get_soft_overlong_punishment

            if reward_funcs is None:
                reward_funcs = [self.countdown_env_reward]
            elif not isinstance(reward_funcs, list):
                reward_funcs = [reward_funcs]
            buffer = max(1, round(fraction * args.max_completion_length))
            penalty = get_soft_overlong_punishment(args.max_completion_length, buffer)
            args = copy.copy(args)  # the weights below are this trainer's; leave the caller's config as it was
            if args.reward_weights is not None and len(args.reward_weights) == len(reward_funcs):
                args.reward_weights = [*args.reward_weights, args.overlong_penalty_weight]
            elif args.reward_weights is None and args.overlong_penalty_weight != 1.0:
                args.reward_weights = [1.0] * len(reward_funcs) + [args.overlong_penalty_weight]
            reward_funcs = [*reward_funcs, penalty]
        super().__init__(model, reward_funcs, args, *trainer_args, **trainer_kwargs)

    def shape_batch(self, batch: dict[str, Any], rollout: Rollout) -> dict[str, Any]:
        if not getattr(self.args, "dynamic_sampling", False):
            return batch
        keep_group = ~rollout.homogeneous_groups()
        keep_row = keep_group[rollout.group_index].to(batch["completion_mask"].dtype)
        self.set_loss_mask(batch, self.loss_mask(batch) * keep_row.unsqueeze(1))
        self.log_metric("countdown/dynamic_sampling_kept_frac", keep_group.float().mean().item(), rollout.mode)
        return batch

    def select_loss_tokens(self, inputs: dict[str, Any]) -> dict[str, Any]:
        args = self.args
        if not getattr(args, "uses_ratio_terms", False):
            return inputs
        behaviour = inputs.get("sampling_per_token_logps")
        if behaviour is None:
            behaviour = inputs.get("old_per_token_logps")
        if behaviour is None:  # on-policy: ρ ≡ 1, nothing is masked and the KL term is 0
            return inputs
        inputs = dict(inputs)
        inputs["old_per_token_logps"] = behaviour
        log_ratio = self.per_token_logps(self.model, inputs) - behaviour
        mask = self.loss_mask(inputs)
        if args.dppo_mask_low is not None:
            keep = dppo_keep_mask(log_ratio, args.dppo_mask_low, args.dppo_mask_high)
            masked = mask.sum() - (mask * keep).sum()
            totals = self.accelerator.gather(torch.stack([masked.float(), mask.sum().float()]).unsqueeze(0)).sum(0)
            self.log_metric("countdown/dppo_masked_frac", (totals[0] / totals[1].clamp(min=1.0)).item())
            mask = mask * keep.to(mask.dtype)
            self.set_loss_mask(inputs, mask)
        if args.kl_tau > 0:
            inputs["advantages"] = kl_adjusted_advantages(inputs["advantages"], log_ratio, args.kl_tau)
        return inputs
