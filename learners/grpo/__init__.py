r"""GRPO and its variants as presets of one learner: GRPO, Dr.GRPO, DAPO and prime-rl's default loss.

All presets share TRL's group-relative advantage on the group of G completions of a prompt,

.. math:: A_i = \frac{r_i - \operatorname{mean}(r_{1..G})}{\operatorname{std}(r_{1..G}) + 10^{-4}}
          \quad\text{(or without the division when } \texttt{scale\_rewards="none"}),

and TRL's clipped surrogate per token, :math:`-\min(\rho_t A, \operatorname{clip}(\rho_t, 1-\varepsilon_{lo},
1+\varepsilon_{hi}) A)` with :math:`\rho_t = \pi_\theta(y_t)/\pi_{old}(y_t)`. What each preset sets
(:data:`PRESETS`, applied by :func:`grpo_config`; any keyword given explicitly wins):

``grpo``
    ``loss_type="grpo"`` (mean over each sequence's tokens, then over sequences), ``scale_rewards="group"``,
    ``epsilon=0.2``, ``beta=0``.
``dr_grpo`` (Liu et al. 2025, "Understanding R1-Zero-like training")
    ``loss_type="dr_grpo"`` (token sum divided by the constant ``B * max_completion_length``: no length
    bias), ``scale_rewards="none"`` (no std division: no difficulty bias), ``epsilon=0.2``, ``beta=0``.
``dapo`` (Yu et al. 2025)
    clip-higher ``epsilon=0.2, epsilon_high=0.28``; token-level loss ``loss_type="dapo"`` (sum over all tokens
    of the batch / their count); overlong reward shaping: TRL's soft overlong punishment (DAPO Eq. 13) added as
    a second reward function with a buffer of ``overlong_buffer_fraction`` (0.25) of ``max_completion_length``;
    dynamic sampling: ``dynamic_sampling=True`` (below); ``scale_rewards="group"``, ``beta=0``.
``prime_rl`` (the shaping post's baseline: prime-rl's default "DPPO policy-gradient term with a KL regularizer")
    .. math:: \mathcal L = -\frac{1}{\sum|y|}\sum_t m_t\,\rho_t A
              \;+\; \tau_{KL}\frac{1}{\sum|y|}\sum_t m_t \log^2\rho_t,
              \qquad \rho_t = \pi_\theta(y_t)/\mu(y_t),\quad m_t = [1-0.2 \le \rho_t \le 1+0.2]

    with μ the inference (sampling) policy: vLLM's log-probs when TRL has them, else TRL's
    ``old_per_token_logps``. ``dppo_mask_low = dppo_mask_high = 0.2``, ``kl_tau = 1e-3``,
    ``loss_type="dapo"`` (the 1/Σ|y| normaliser; masked tokens still count in it), ``scale_rewards="none"``,
    ``epsilon = epsilon_high = 0.2`` (so TRL's clip never binds on an unmasked token),
    ``vllm_importance_sampling_correction=False`` (μ already enters ρ). The seed's δ cap of ρ is not
    needed: unmasked ρ ≤ 1.2. On-policy single-iteration runs without vLLM have ρ ≡ 1 (TRL then does not
    even compute π_old), where the preset reduces to token-level GRPO without std scaling.

How the extras are implemented, through the two seams of :mod:`learners.core.trainer` only:

* Dynamic sampling (seam 1). DAPO over-samples prompts and keeps only groups whose rewards are not all equal.
  Refilling the batch would mean generating again inside TRL's ``_generate``, which the seams exclude. Policy
  here: **filter, no refill** — the loss mask of every homogeneous group is set to zero, and the token
  normaliser (``num_items_in_batch``) is recounted over the kept tokens, so each kept token weighs exactly as
  in a batch made of kept groups only. A batch with no informative group gives a zero loss (logged as
  ``countdown/dynamic_sampling_kept_frac`` = 0). To keep the effective batch size, raise
  ``per_device_train_batch_size`` by 1/kept-fraction.
* DPPO mask and squared-log-ratio KL (seam 2). ρ is computed on the micro-batch with one extra no-grad forward
  pass (only when π_old or μ exists). Masked tokens leave the loss mask. The KL term enters as a per-token
  advantage :math:`A'_t = A - 2\tau\log\rho_t/\rho_t` (detached), whose surrogate :math:`\rho_t A'_t` has
  exactly the gradient :math:`\nabla(\rho_t A - \tau\log^2\rho_t)` (the logged loss value is the surrogate's).
  The no-grad pass equals the loss's forward pass only without dropout (Qwen models have none).
"""

from learners.core.lazy import lazy_exports

__all__ = ["GRPOLearner", "GRPOLearnerConfig", "PRESETS", "dppo_keep_mask", "grpo_config", "kl_adjusted_advantages"]
__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "GRPOLearnerConfig": "config",
        "grpo_config": "config",
        "GRPOLearner": "trainer",
        "dppo_keep_mask": "trainer",
        "kl_adjusted_advantages": "trainer",
        "PRESETS": "presets",
    },
)
