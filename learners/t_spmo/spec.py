"""The T-SPMO learner's registration. Torch-free: the registry imports it to list learners."""

from __future__ import annotations

from pathlib import Path

from learners.core.spec import AlgorithmSpec, LearnerSpec, Mechanism


def async_refusal(options) -> str | None:
    """T-SPMO never trains on async rollouts (see the message)."""
    return ("T-SPMO cannot train on async rollouts: its prefix-trie advantages A(v|p) estimate the values of the "
            "policy that sampled the group, and stale samples estimate an older policy's, which no per-token "
            "ratio corrects")  # fmt: skip


SPEC = AlgorithmSpec(
    learners={
        "t_spmo": LearnerSpec(
            __package__,
            "TSPMOConfig",
            "TSPMOTrainer",
            "T-SPMO: prefix-trie token advantages",
            compare_default=True,
            async_refusal=async_refusal,
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
