"""The T-SPMO learner's registration. Torch-free: the registry imports it to list learners."""

from __future__ import annotations

from pathlib import Path

from learners.core.spec import AlgorithmSpec, LearnerSpec, Mechanism

SPEC = AlgorithmSpec(
    learners={
        "t_spmo": LearnerSpec(
            __package__,
            "TSPMOConfig",
            "TSPMOTrainer",
            "T-SPMO: prefix-trie token advantages",
            compare_default=True,
            mechanisms=(
                Mechanism(
                    "tspmo/loss_token_share", "trie: share of tokens merged into shared transitions", complement=True
                ),
                Mechanism(
                    "tspmo/singleton_share", "trie: share of transitions resting on one completion", changes=False
                ),
            ),
        )
    },
    config_sources=(Path(__file__).with_name("config.py"),),
)
