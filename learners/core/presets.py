"""The GRPO-family loss presets (``grpo``, ``dr_grpo``, ``dapo``, ``prime_rl``) as plain config overrides.

They live with the registry (:mod:`learners.core.registry`), which names a learner per preset, so that the base
layer depends on no algorithm package; :mod:`learners.grpo` documents them and its config applies them. Imports
nothing heavy."""

from __future__ import annotations

import math
from typing import Any

PRESETS: dict[str, dict[str, Any]] = {
    "grpo": dict(loss_type="grpo", scale_rewards="group", epsilon=0.2, beta=0.0),
    "dr_grpo": dict(loss_type="dr_grpo", scale_rewards="none", epsilon=0.2, beta=0.0),
    "dapo": dict(
        loss_type="dapo",
        scale_rewards="group",
        epsilon=0.2,
        epsilon_high=0.28,
        beta=0.0,
        dynamic_sampling=True,
        overlong_buffer_fraction=0.2,  # DAPO: L_cache = 4096 of L_max = 20480
    ),
    "prime_rl": dict(
        loss_type="dapo",  # 1 / (loss tokens of the step), as prime-rl's rl_scale
        scale_rewards="none",  # A = r - mean(group), prime-rl's GRPOAlgorithm
        epsilon=math.inf,  # no clipping: prime-rl's trust region is the DPPO mask alone
        epsilon_high=math.inf,
        beta=0.0,
        dppo_mask_low=0.2,
        dppo_mask_high=0.2,
        adv_tau=1.0,
        kl_tau=1e-3,
        filter_zero_advantages=True,  # orchestrator.train.filter_zero_advantages (default True)
        vllm_importance_sampling_correction=False,  # μ enters the ratio itself
    ),
}
