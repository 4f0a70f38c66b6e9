"""The S-GRPO learner's registration. Torch-free: the registry imports it to list learners."""

from __future__ import annotations

from pathlib import Path

from learners.core.spec import AlgorithmSpec, LearnerSpec, Mechanism

SPEC = AlgorithmSpec(
    learners={
        "s_grpo": LearnerSpec(
            __package__,
            "SGRPOConfig",
            "SGRPOTrainer",
            "S-GRPO: α + Bernoulli(P) loss tokens ≤ k",
            compare_default=True,
            mechanisms=(
                Mechanism("s_grpo/loss_token_frac", "token selection: share of loss tokens dropped", complement=True),
            ),
        )
    },
    config_sources=(Path(__file__).with_name("config.py"),),
)
