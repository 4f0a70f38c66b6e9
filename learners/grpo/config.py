"""The GRPO learner's config and :func:`grpo_config`, which applies a preset (see the package docstring)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from ..core.config import CountdownConfig
from .advantages import ESTIMATORS
from .presets import PRESETS

# Loss types whose per-token surrogate is TRL's min(ρA, clip(ρ)A): with no clipping it is ρA, which the prime-rl
# loss needs (its per-token advantages are built for the surrogate -ρ·A').
_RATIO_LOSS_TYPES = ("grpo", "bnpo", "dr_grpo", "dapo", "luspo")


@dataclass
class GRPOPresetConfig(CountdownConfig):
    """``GRPOConfig`` plus the switches the presets need (all off by default: plain TRL GRPO); DAPO's overlong
    penalty is a reward setting every learner shares (:class:`~learners.core.config.CountdownConfig`).

    Parameters:
        dynamic_sampling: zero the loss of groups whose *verifier verdicts* all agree (DAPO; filter without
            refill). The overlong penalty and any format bonus do not count: DAPO filters on accuracy.
        dppo_mask_low, dppo_mask_high: prime-rl's DPPO binary-TV trust region on d = π(y_t) − μ(y_t): drop a token
            when A > 0 and d > high, or A ≤ 0 and d < −low (``None`` = off).
        adv_tau: prime-rl's ``adv_tau``: the policy-gradient term uses adv_tau · A (1 = unchanged).
        kl_tau: weight τ of prime-rl's τ·log²(π/μ) on every loss token (0 = off).
        filter_zero_advantages: drop tokens whose advantage is exactly 0 from the loss and its normaliser
            (prime-rl's ``orchestrator.train.filter_zero_advantages``).
        advantage_estimator: ``"group"`` (TRL's group-relative advantage, scaled as ``scale_rewards`` says),
            ``"rloo"`` (leave-one-out baseline) or ``"reinforce_pp_baseline"`` (group mean, then token-level
            whitening over the batch); the last two replace TRL's advantages in seam 1
            (:mod:`learners.grpo.advantages`).

    With ``dppo_mask_*`` or ``kl_tau`` set the loss is prime-rl's, which has no clipping: ``epsilon`` and
    ``epsilon_high`` must then be ``math.inf`` and ``loss_type`` one whose surrogate is ρ·A.
    """

    dynamic_sampling: bool = field(default=False, metadata={"help": "DAPO dynamic sampling on the verdict."})
    dppo_mask_low: float | None = field(default=None, metadata={"help": "Drop A<=0 tokens with π-μ < -low."})
    dppo_mask_high: float | None = field(default=None, metadata={"help": "Drop A>0 tokens with π-μ > high."})
    adv_tau: float = field(default=1.0, metadata={"help": "Advantage scale of the policy-gradient term."})
    kl_tau: float = field(default=0.0, metadata={"help": "Squared-log-ratio KL weight (prime-rl kl_tau)."})
    filter_zero_advantages: bool = field(default=False, metadata={"help": "Drop zero-advantage tokens."})
    advantage_estimator: str = field(
        default="group", metadata={"help": "Advantage: group (TRL's), rloo or reinforce_pp_baseline."}
    )

    def __post_init__(self):
        super().__post_init__()
        if self.advantage_estimator not in ESTIMATORS:
            choices = tuple(ESTIMATORS)
            raise ValueError(f"advantage_estimator must be one of {choices}, got {self.advantage_estimator!r}")
        if self.kl_tau < 0:
            raise ValueError(f"kl_tau must be >= 0, got {self.kl_tau}")
        if not self.adv_tau >= 0:
            raise ValueError(f"adv_tau must be >= 0, got {self.adv_tau}")
        for name in ("dppo_mask_low", "dppo_mask_high"):
            value = getattr(self, name)
            if value is not None and value < 0:
                raise ValueError(f"{name} must be >= 0 or None, got {value}")
        if (self.dppo_mask_low is None) != (self.dppo_mask_high is None):
            raise ValueError("set both dppo_mask_low and dppo_mask_high, or neither")
        if self.uses_prime_rl_loss:
            high = self.epsilon if self.epsilon_high is None else self.epsilon_high
            if not (math.isinf(self.epsilon) and math.isinf(high)):
                raise ValueError(
                    "prime-rl's loss (dppo_mask_* or kl_tau) has no clipping: set epsilon = epsilon_high = math.inf "
                    f"(got epsilon={self.epsilon}, epsilon_high={self.epsilon_high})"
                )
            if self.loss_type not in _RATIO_LOSS_TYPES:
                raise ValueError(f"prime-rl's loss needs loss_type in {_RATIO_LOSS_TYPES}, got {self.loss_type!r}")
            if self.importance_sampling_level != "token":
                raise ValueError("prime-rl's loss is per token: importance_sampling_level must be 'token'")

    @property
    def uses_prime_rl_loss(self) -> bool:
        """True when the DPPO mask or the squared-log-ratio KL is on (prime-rl's default loss)."""
        return self.dppo_mask_low is not None or self.kl_tau > 0

    @property
    def uses_ratio_terms(self) -> bool:
        """True when seam 2 rewrites the advantages (prime-rl's loss or adv_tau ≠ 1)."""
        return self.uses_prime_rl_loss or self.adv_tau != 1.0


def grpo_config(preset: str = "grpo", **kwargs: Any) -> GRPOPresetConfig:
    """A :class:`GRPOPresetConfig` with ``PRESETS[preset]`` applied, then ``kwargs`` (which win)."""
    if preset not in PRESETS:
        raise ValueError(f"unknown GRPO preset {preset!r}; choose one of {sorted(PRESETS)}")
    return GRPOPresetConfig(**{**PRESETS[preset], **kwargs})
