"""The GRPO / Dr.GRPO / DAPO / prime-rl trainer: only its seam overrides, plus prime-rl's loss maths.

The equations are in the package docstring (:mod:`learners.grpo`).
"""

from __future__ import annotations

from typing import Any

import torch

from ..core.rollout import groups_all_equal, weighted_reward_total
from ..core.trainer import CountdownGRPOTrainer, Rollout
from .advantages import ESTIMATORS

# exp(±60) stays finite in float32 and its product with exp(∓60) is exact enough; beyond, ρ under/overflows.
_MAX_ABS_LOG_RATIO = 60.0


def dppo_keep_mask(
    trainer_logprobs: torch.Tensor,
    sampling_logprobs: torch.Tensor,
    advantages: torch.Tensor,
    *,
    mask_low: float = 0.2,
    mask_high: float = 0.2,
) -> torch.Tensor:
    """(B,T) bool, True = kept: prime-rl's DPPO binary-TV trust region (``default_loss_fn``).

    With d = π(y_t) − μ(y_t) (probabilities, not log-probabilities), a token is dropped when A > 0 and
    d > ``mask_high``, or when A ≤ 0 and d < −``mask_low`` (prime-rl: ``torch.where(advantages > 0,
    probs_diff > dppo_mask_high, probs_diff < -dppo_mask_low)``). ``advantages`` is (B,) or (B,T).
    A NaN log-probability gives d = NaN, and both comparisons are false: the token is kept, as in prime-rl's code.
    """
    if advantages.dim() == 1:
        advantages = advantages.unsqueeze(1)
    d = torch.exp(trainer_logprobs) - torch.exp(sampling_logprobs)
    dropped = torch.where(advantages > 0, d > mask_high, d < -mask_low)
    return ~dropped


def prime_rl_advantages(
    advantages: torch.Tensor,
    keep: torch.Tensor,
    log_ratio: torch.Tensor,
    *,
    adv_tau: float = 1.0,
    kl_tau: float = 0.0,
) -> torch.Tensor:
    """(B,T) per-token advantages A' whose TRL surrogate −ρ·A' (no clipping) has the gradient of prime-rl's loss.

    prime-rl's per-token loss is ℓ_t = −keep_t·adv_tau·A_t·ρ_t + kl_tau·log²ρ_t with ρ_t = π/μ. Its gradient is
    (−keep·adv_tau·A·ρ + 2·kl_tau·log ρ)·∇log π. TRL's unclipped surrogate −ρ_t·A'_t (A' a constant) has the
    gradient −ρ·A'·∇log π, so

        A'_t = keep_t · adv_tau · A_t − 2 · kl_tau · log ρ_t / ρ_t        (log ρ detached)

    gives exactly prime-rl's gradient. ``log_ratio`` is clamped to ±60 inside the KL coefficient only (float32).
    """
    if advantages.dim() == 1:
        advantages = advantages.unsqueeze(1).expand_as(log_ratio)
    log_ratio = log_ratio.detach().clamp(-_MAX_ABS_LOG_RATIO, _MAX_ABS_LOG_RATIO)
    out = torch.where(keep, adv_tau * advantages, torch.zeros_like(advantages))
    if kl_tau > 0:
        out = out - 2.0 * kl_tau * log_ratio * torch.exp(-log_ratio)
    return out.to(advantages.dtype)


class GRPOPresetTrainer(CountdownGRPOTrainer):
    """GRPO / Dr.GRPO / DAPO / prime-rl loss on Countdown (see the package docstring for the equations).

    Use with a :class:`GRPOPresetConfig` (e.g. from :func:`grpo_config`); a plain ``GRPOConfig`` gives plain
    GRPO. Only the seams differ from :class:`~learners.core.trainer.CountdownGRPOTrainer`: dynamic sampling and
    the zero-advantage filter in ``shape_batch``; the DPPO mask, adv_tau and the squared-log-ratio KL in
    ``select_loss_tokens``.

    Asynchronous rollouts: supported (as in prime-rl and TRL's async trainer): TRL's truncated importance weight
    π/μ on the engine's recorded log-probabilities corrects the staleness; prime-rl's DPPO mask already compares
    π with the sampling policy μ.
    """

    # ------------------------------------------------------------------------------------------------ seam 1
    def shape_batch(self, batch: dict[str, Any], rollout: Rollout) -> dict[str, Any]:
        estimate = ESTIMATORS[getattr(self.args, "advantage_estimator", "group")]
        if estimate is not None:
            loss_tokens = self.gather_rows(self.loss_mask(batch).sum(dim=1))
            batch["advantages"] = rollout.local(estimate(rollout.rewards, rollout.num_generations, loss_tokens))
        if getattr(self.args, "dynamic_sampling", False):
            keep_group = ~groups_all_equal(rollout.grouped(self.verdicts(rollout)))
            keep_row = keep_group[rollout.group_index].to(batch["completion_mask"].dtype)
            self.set_loss_mask(batch, self.loss_mask(batch) * keep_row.unsqueeze(1))
            self.log_metric("countdown/dynamic_sampling_kept_frac", keep_group.float().mean().item(), rollout.mode)
        if getattr(self.args, "filter_zero_advantages", False):
            advantages = batch["advantages"]
            nonzero = advantages != 0 if advantages.dim() == 2 else (advantages != 0).unsqueeze(1)
            self.set_loss_mask(batch, self.loss_mask(batch) * nonzero.to(batch["completion_mask"].dtype))
        return batch

    def verdicts(self, rollout: Rollout) -> torch.Tensor:
        """(N,) what dynamic sampling compares within a group: the rollout's verdict (1 correct and within the
        budget, 0 not); for rows without a puzzle, the reward total without this learner's overlong penalty."""
        verdicts = rollout.verdicts if rollout.verdicts is not None else torch.full_like(rollout.rewards, torch.nan)
        known = ~torch.isnan(verdicts)
        if bool(known.all()):
            return verdicts
        weights = self.reward_weights.clone()
        if self._overlong_column is not None:
            weights[self._overlong_column] = 0.0
        return torch.where(known, verdicts, weighted_reward_total(rollout.rewards_per_func, weights))

    # ------------------------------------------------------------------------------------------------ seam 2
    def select_loss_tokens(self, inputs: dict[str, Any]) -> dict[str, Any]:
        args = self.args
        if not getattr(args, "uses_ratio_terms", False):
            return inputs
        inputs = dict(inputs)
        advantages = inputs["advantages"]
        mu = inputs.get("sampling_per_token_logps")
        if mu is None:
            mu = inputs.get("old_per_token_logps")
        if mu is None:  # on-policy, one update per batch: μ = π, so ρ ≡ 1, d = 0 (kept) and log²ρ = 0
            inputs["advantages"] = args.adv_tau * advantages
            return inputs
        pi = self.per_token_logps(self.model, inputs).detach()
        mu = torch.where(torch.isnan(mu), pi, mu)  # unknown μ: ratio 1 (TRL's convention), never a NaN loss
        log_ratio = pi - mu
        if args.dppo_mask_low is not None:
            keep = dppo_keep_mask(pi, mu, advantages, mask_low=args.dppo_mask_low, mask_high=args.dppo_mask_high)
        else:
            keep = torch.ones_like(log_ratio, dtype=torch.bool)
        inputs["old_per_token_logps"] = mu  # TRL's ratio becomes π/μ
        inputs["advantages"] = prime_rl_advantages(
            advantages, keep, log_ratio, adv_tau=args.adv_tau, kl_tau=args.kl_tau
        )
        mask = self.loss_mask(inputs).float()
        mismatch_kl = torch.exp(log_ratio) - log_ratio - 1.0  # prime-rl's logged mismatch_kl
        self.log_ratio_metrics(
            {
                "prime_rl/is_masked": ((mask * ~keep).sum(), mask.sum()),
                "prime_rl/mismatch_kl": ((mask * mismatch_kl).sum(), mask.sum()),
            }
        )
        return inputs
