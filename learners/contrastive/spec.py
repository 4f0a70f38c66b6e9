"""The contrastive learner's registration: shaping on prime-rl's loss (``contrastive``) and, as an ablation, on
TRL-default GRPO (``contrastive_grpo``); each logs its base loss's mechanisms and the shaping's. Torch-free."""

from __future__ import annotations

from pathlib import Path

from learners.core.spec import AlgorithmSpec, LearnerSpec, Mechanism

from ..grpo.spec import CLIP, DPPO

SHAPING = (
    Mechanism("contrastive/shaped_row_frac", "shaping: share of rows shaped"),
    Mechanism("contrastive/paragraphs_per_shaped_row", "paragraphs per shaped row", changes=False),
    Mechanism("contrastive/mean_abs_shaping", "mean |A_shape| per completion token", changes=False),
)


def async_refusal(options) -> str | None:
    """With the frozen scorer the potential is a fixed function of the prefix (async is fine); the moving one is
    refused (see the message)."""
    if getattr(options, "scorer", None) == "moving":
        return ("contrastive with scorer='moving' cannot train on async rollouts: its potential is the current "
                "policy's, the stale samples an older policy's (use scorer='frozen')")  # fmt: skip
    return None


SPEC = AlgorithmSpec(
    learners={
        "contrastive": LearnerSpec(
            __package__,
            "ContrastiveConfig",
            "ContrastiveTrainer",
            "contrastive shaping on prime-rl's loss",
            compare_default=True,
            async_refusal=async_refusal,
            mechanisms=(*DPPO, *SHAPING),
        ),
        "contrastive_grpo": LearnerSpec(
            __package__,
            "ContrastiveConfig",
            "ContrastiveTrainer",
            "contrastive shaping on TRL-default GRPO (ablation)",
            {"base_learner": "grpo"},
            async_refusal=async_refusal,
            mechanisms=(CLIP, *SHAPING),
        ),
    },
    config_sources=(Path(__file__).with_name("config.py"),),
)
