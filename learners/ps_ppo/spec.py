"""The PS-PPO learner's registration. Torch-free: the registry imports it to list learners."""

from __future__ import annotations

from pathlib import Path

from learners.core.spec import AlgorithmSpec, LearnerSpec, Mechanism

SPEC = AlgorithmSpec(
    learners={
        "ps_ppo": LearnerSpec(
            __package__,
            "PSPPOConfig",
            "PSPPOTrainer",
            "PS-PPO: unbiased random prefixes",
            compare_default=True,
            mechanisms=(
                Mechanism(
                    "ps_ppo/cutoff_kept_frac", "survival design: share of loss tokens truncated", complement=True
                ),
                Mechanism("ps_ppo/mean_cutoff_tokens", "mean cutoff (tokens kept per row)", changes=False),
                Mechanism("ps_ppo/kept_token_frac", "all skipping: share of loss tokens dropped", complement=True),
                Mechanism("ps_ppo/floor_token_frac", "survival at the floor: share of gradient tokens", changes=False),
            ),
        )
    },
    config_sources=(Path(__file__).with_name("config.py"),),
)
