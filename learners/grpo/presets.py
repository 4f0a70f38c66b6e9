"""The GRPO-family loss presets as plain config overrides: ``grpo``, ``dr_grpo``, ``dapo``, ``prime_rl``, the
losses TRL 1.16's ``GRPOConfig`` implements (:data:`TRL_LOSS_PRESETS`) and two advantage estimators
(:data:`ADVANTAGE_PRESETS`).

:mod:`learners.grpo.spec` registers a learner per preset, :func:`learners.grpo.config.grpo_config` applies one, and
the package docstring gives their equations. Imports nothing heavy (the registry reads them without torch)."""

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


# ---------------------------------------------------------------------------------------------------------------
# The losses and corrections TRL 1.16's GRPOConfig already implements, as presets of the GRPO learner. Values are
# the papers' (or TRL's paper index's) settings; every one is documented in learners/grpo/__init__.py and checked
# against a hand computation of its loss gradient in tests/learners/test_trl_presets.py. Several act only off-policy
# (num_iterations > 1, steps_per_generation > gradient_accumulation_steps, or vLLM sampling): on-policy with one
# update per batch their ratio is 1 and they train exactly as their base.
TRL_LOSS_PRESETS: dict[str, dict[str, Any]] = {
    # GSPO (arXiv 2507.18071): one sequence-level ratio exp(mean_t log π/π_old), clipped to [1 - 3e-4, 1 + 4e-4]
    "gspo": dict(
        loss_type="grpo", importance_sampling_level="sequence", scale_rewards="group", epsilon=3e-4,
        epsilon_high=4e-4, beta=0.0,
    ),
    # CISPO (MiniMax-M1, arXiv 2506.13585): -clamp(ρ, max=ε_high).detach()·A·log π; ε_max = 5 as in ScaleRL
    "cispo": dict(loss_type="cispo", scale_rewards="group", epsilon_high=5.0, beta=0.0),
    # SAPO (arXiv 2511.20347): soft gate 4/τ·σ(τ(ρ - 1)) instead of the clip; τ+ = 1.0, τ- = 1.05
    "sapo": dict(
        loss_type="sapo", scale_rewards="group", sapo_temperature_pos=1.0, sapo_temperature_neg=1.05, beta=0.0
    ),
    # LUSPO (arXiv 2602.05261): GSPO's sequence ratio and clip, each sequence's loss summed over its tokens
    "luspo": dict(
        loss_type="luspo", importance_sampling_level="sequence", scale_rewards="group", epsilon=3e-4,
        epsilon_high=4e-4, beta=0.0,
    ),
    # VESPO (arXiv 2602.10693): -φ(w)·A·log π with the detached Gamma weight φ(w) = e^λ w^k e^(-λw) of the sequence
    # ratio w = exp(Σ_t log π/π_old); TRL's k/λ defaults (2, 3 for A >= 0; 3, 2 for A < 0)
    "vespo": dict(loss_type="vespo", importance_sampling_level="token", scale_rewards="group", beta=0.0),
    # INTELLECT-2 (arXiv 2505.07291): GRPO with two-sided clipping, the ratio capped at δ = 4 for negative advantages
    "grpo_delta": dict(loss_type="grpo", scale_rewards="group", epsilon=0.2, delta=4.0, beta=0.0),
    # Beyond the 80/20 rule (arXiv 2506.01939): the policy loss on the top 20 % of tokens by entropy only
    "grpo_top_entropy": dict(loss_type="grpo", scale_rewards="group", epsilon=0.2, top_entropy_quantile=0.2, beta=0.0),
    # DeepSeek-V3.2 (arXiv 2512.02556) off-policy sequence masking: drop a sequence with A < 0 whose mean
    # log μ/π exceeds δ = 0.5 (μ: the sampling policy)
    "grpo_opsm": dict(loss_type="grpo", scale_rewards="group", epsilon=0.2, off_policy_mask_threshold=0.5, beta=0.0),
    # vLLM sampling correction, token-level truncated IS (Yao et al. 2025, "Your efficient RL framework secretly
    # brings you off-policy RL training"): every token's loss times min(π_old/μ, 2); acts only with use_vllm
    "grpo_tis": dict(
        loss_type="grpo", scale_rewards="group", epsilon=0.2, beta=0.0, vllm_importance_sampling_correction=True,
        vllm_importance_sampling_mode="token_truncate", vllm_importance_sampling_clip_max=2.0,
    ),
    # vLLM sampling correction, token-level masked IS (IcePop, Ling team 2025): tokens with π_old/μ outside
    # [0.5, 2] leave the loss, the others are weighted by it; acts only with use_vllm
    "grpo_mis": dict(
        loss_type="grpo", scale_rewards="group", epsilon=0.2, beta=0.0, vllm_importance_sampling_correction=True,
        vllm_importance_sampling_mode="token_mask", vllm_importance_sampling_clip_min=0.5,
        vllm_importance_sampling_clip_max=2.0,
    ),
}  # fmt: skip

# Advantage estimators other than TRL's group-relative one, computed in seam 1 (learners/grpo/advantages.py).
ADVANTAGE_PRESETS: dict[str, dict[str, Any]] = {
    # RLOO (Ahmadian et al. 2024, arXiv 2402.14740): A_i = r_i - mean of the other G - 1 = G/(G-1)·(r_i - mean r);
    # REINFORCE on the sequence log-probability (token sum) with Dr.GRPO's constant normaliser B·L_max
    "rloo": dict(advantage_estimator="rloo", loss_type="dr_grpo", scale_rewards="none", epsilon=0.2, beta=0.0),
    # REINFORCE++-baseline (Hu et al. 2025, arXiv 2501.03262): r - mean(group), then whitened over every loss token
    # of the batch (OpenRLHF); token-level loss normaliser
    "reinforce_pp": dict(
        advantage_estimator="reinforce_pp_baseline", loss_type="dapo", scale_rewards="none", epsilon=0.2, beta=0.0
    ),
}

PRESETS.update(TRL_LOSS_PRESETS)
PRESETS.update(ADVANTAGE_PRESETS)
