"""The GRPO presets as plain config overrides (documented in :mod:`learners.grpo`), and the tiny-model CPU run
settings that tests and benchmarks start from; imports nothing heavy."""

from __future__ import annotations

import os
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

# GRPOConfig values for a fast, deterministic CPU run of the embedded tiny model (tests and benchmarks): one
# generation batch of 2 prompts x 4 completions, 16 new tokens, 2 steps, no trackers, no progress bar.
TINY_CPU_RUN: dict[str, Any] = dict(
    use_cpu=True,
    bf16=False,
    gradient_checkpointing=False,
    use_vllm=False,
    report_to="none",
    per_device_train_batch_size=8,
    num_generations=4,
    max_completion_length=16,
    max_steps=2,
    learning_rate=1e-3,
    logging_steps=1,
    save_strategy="no",
    seed=0,
    disable_tqdm=True,
    dataloader_num_workers=0,
)


def tiny_cpu_kwargs(output_dir: str | os.PathLike[str], **overrides: Any) -> dict[str, Any]:
    """Keyword arguments for ``GRPOConfig`` (or a learner's config) for a CPU run of the tiny model.

    :data:`TINY_CPU_RUN` with ``output_dir`` set; ``overrides`` replace or add keys.
    """
    return {**TINY_CPU_RUN, "output_dir": str(output_dir), **overrides}
