"""The GRPO learner's config and :func:`grpo_config`, which applies a preset (see the package docstring)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..core.config import CountdownConfig
from .presets import PRESETS


@dataclass
class GRPOLearnerConfig(CountdownConfig):
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
