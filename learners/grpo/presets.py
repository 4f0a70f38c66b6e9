"""The GRPO presets as plain config overrides (documented in :mod:`learners.grpo`); imports nothing heavy."""

from __future__ import annotations

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
        overlong_buffer_fraction=0.25,
    ),
    "prime_rl": dict(
        loss_type="dapo",
        scale_rewards="none",
        epsilon=0.2,
        epsilon_high=0.2,
        beta=0.0,
        dppo_mask_low=0.2,
        dppo_mask_high=0.2,
        kl_tau=1e-3,
        vllm_importance_sampling_correction=False,
    ),
}
