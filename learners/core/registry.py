"""The learner registry: name -> how to build its config and trainer. Adding a learner is one line in LEARNERS.

Entries name modules and classes as strings so that listing learners imports neither torch nor trl.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .presets import PRESETS


@dataclass(frozen=True)
class LearnerSpec:
    """A learner: ``module`` holds ``config_class`` (a ``GRPOConfig`` subclass) and ``trainer_class``
    (a ``CountdownGRPOTrainer`` subclass); ``defaults`` are config values applied before the user's."""

    module: str
    config_class: str
    trainer_class: str
    description: str = ""
    defaults: Mapping[str, Any] = field(default_factory=dict)

    def load(self) -> tuple[type, type]:
        """Import the module and return ``(config_class, trainer_class)``."""
        module = importlib.import_module(self.module)
        return getattr(module, self.config_class), getattr(module, self.trainer_class)

    def make_config(self, **kwargs: Any):
        """The learner's config from ``defaults`` then ``kwargs``; unknown keys raise a clear ``TypeError``."""
        config_class, _ = self.load()
        known = set(getattr(config_class, "__dataclass_fields__", {}))
        unknown = sorted(set(kwargs) - known)
        if unknown:
            raise TypeError(f"{self.config_class} has no option(s) {unknown}")
        return config_class(**{**dict(self.defaults), **kwargs})


def _grpo(preset: str, description: str) -> LearnerSpec:
    return LearnerSpec("learners.grpo", "GRPOLearnerConfig", "GRPOLearner", description, PRESETS[preset])


LEARNERS: dict[str, LearnerSpec] = {
    "grpo": _grpo("grpo", "GRPO: group-std-scaled advantages, per-sequence token mean"),
    "dr_grpo": _grpo("dr_grpo", "Dr.GRPO: no std scaling, constant length normaliser"),
    "dapo": _grpo("dapo", "DAPO: clip-higher, token-level loss, overlong shaping, dynamic sampling"),
    "prime_rl": _grpo("prime_rl", "prime-rl's default loss: DPPO binary-TV mask 0.2/0.2, -A*ratio, 1e-3 log^2 KL"),
    "s_grpo": LearnerSpec("learners.s_grpo", "SGRPOConfig", "SGRPOTrainer", "S-GRPO: α + Bernoulli(P) loss tokens ≤ k"),
    "ps_ppo": LearnerSpec("learners.ps_ppo", "PSPPOConfig", "PSPPOTrainer", "PS-PPO: unbiased random prefixes"),
    "t_spmo": LearnerSpec("learners.t_spmo", "TSPMOConfig", "TSPMOTrainer", "T-SPMO: prefix-trie token advantages"),
    "contrastive": LearnerSpec(
        "learners.contrastive", "ContrastiveConfig", "ContrastiveTrainer", "contrastive shaping on prime-rl's loss"
    ),
    "contrastive_grpo": LearnerSpec(
        "learners.contrastive",
        "ContrastiveConfig",
        "ContrastiveTrainer",
        "contrastive shaping on TRL-default GRPO (ablation)",
        {"base_learner": "grpo"},
    ),
}


# The losses of TRL 1.16's GRPOConfig and two advantage estimators, as presets of the GRPO learner
# (learners/core/presets.py: TRL_LOSS_PRESETS, ADVANTAGE_PRESETS; the equations in learners/grpo/__init__.py). One
# description per preset (tests/test_trl_presets.py checks the two lists agree).
TRL_PRESET_DESCRIPTIONS: dict[str, str] = {
    "gspo": "GSPO: sequence-level ratio exp(mean log π/π_old), clip 3e-4/4e-4",
    "cispo": "CISPO: clipped, detached IS weight min(ρ, 5) times A·log π",
    "sapo": "SAPO: soft temperature gate 4/τ·σ(τ(ρ-1)) instead of the clip",
    "luspo": "LUSPO: GSPO's sequence ratio, each sequence's loss summed over its tokens",
    "vespo": "VESPO: Gamma weight φ(w) of the sequence ratio times A·log π",
    "grpo_delta": "GRPO + INTELLECT-2's two-sided clipping (ratio capped at δ = 4)",
    "grpo_top_entropy": "GRPO on the top 20 % highest-entropy tokens only (80/20 rule)",
    "grpo_opsm": "GRPO + DeepSeek-V3.2 off-policy sequence masking (A < 0 and KL > 0.5: dropped)",
    "grpo_tis": "GRPO + token-level truncated vLLM importance sampling, C = 2",
    "grpo_mis": "GRPO + token-level masked vLLM importance sampling (IcePop), [0.5, 2]",
    "rloo": "RLOO: leave-one-out baseline G/(G-1)·(r - mean r), sequence-sum REINFORCE",
    "reinforce_pp": "REINFORCE++-baseline: group mean, then token-level whitening over the batch",
}
LEARNERS.update({name: _grpo(name, description) for name, description in TRL_PRESET_DESCRIPTIONS.items()})


def get_learner(name: str) -> LearnerSpec:
    """The registered learner ``name``; a clear ``ValueError`` lists the choices otherwise."""
    try:
        return LEARNERS[name]
    except KeyError:
        raise ValueError(f"unknown learner {name!r}; choose one of {sorted(LEARNERS)}") from None
