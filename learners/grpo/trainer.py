"""The GRPO / Dr.GRPO / DAPO / prime-rl trainer: only its seam overrides.

The equations are in the package docstring (:mod:`learners.grpo`).
"""

from __future__ import annotations

import copy
from typing import Any

import torch

from ..core.trainer import CountdownGRPOTrainer, Rollout


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
    GRPO. Only the seams differ from :class:`~learners.core.trainer.CountdownGRPOTrainer`: dynamic sampling in
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
