"""The oracle-shaped learner's registration: shaping by the exact step oracle on prime-rl's loss (the contrastive
learner's default base), and the quantities that show the shaping acting. Torch-free."""

from __future__ import annotations

from pathlib import Path

from learners.core.spec import AlgorithmSpec, LearnerSpec, Mechanism

from ..grpo.presets import PRESETS
from ..grpo.spec import DPPO

SHAPING = (
    Mechanism("oracle_shaped/shaped_row_frac", "shaping: share of rows shaped"),
    Mechanism("oracle_shaped/unparsed_row_frac", "rows refused (reasoning not readable)", changes=False),
    Mechanism("oracle_shaped/mean_abs_shaping", "mean |A_shape| per completion token", changes=False),
)

SPEC = AlgorithmSpec(
    learners={
        "oracle_shaped": LearnerSpec(
            __package__,
            "OracleShapedConfig",
            "OracleShapedTrainer",
            "potential shaping with the exact step oracle as the potential, on prime-rl's loss (an upper bound)",
            PRESETS["prime_rl"],
            mechanisms=(*DPPO, *SHAPING),
        ),
    },
    config_sources=(Path(__file__).with_name("config.py"),),
)
