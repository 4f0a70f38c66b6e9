r"""GRPO and its variants as presets of one learner: GRPO, Dr.GRPO, DAPO, prime-rl's default loss, the losses of TRL's
``GRPOConfig`` (GSPO, CISPO, SAPO, LUSPO, VESPO, δ-clipping, top-entropy, off-policy masking, vLLM importance
sampling) and two advantage estimators (RLOO, REINFORCE++-baseline).

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
``dapo`` (Yu et al. 2025, arXiv 2503.14476)
    clip-higher ``epsilon=0.2, epsilon_high=0.28``; token-level loss ``loss_type="dapo"`` (sum over all tokens
    of the batch / their count); overlong reward shaping: TRL's soft overlong punishment (DAPO Eq. 13) added as
    a second reward function with the buffer L_cache = ``overlong_buffer_fraction`` × L_max. DAPO's paper uses
    L_max = 20480 and L_cache = 4096, so the preset's fraction is 4096 / 20480 = 0.2 of ``max_completion_length``.
    Dynamic sampling: ``dynamic_sampling=True`` (below); ``scale_rewards="group"``, ``beta=0``.
``prime_rl`` (the shaping post's baseline: prime-rl's default loss, "DPPO-Binary TV + Kimi-K2.5 KL")
    Source: github.com/PrimeIntellect-ai/prime-rl at 559b44772e47 (2026-08-21): ``src/prime_rl/trainer/rl/loss.py``
    ``default_loss_fn`` with ``DefaultLossConfig`` (``packages/prime-rl-configs/.../configs/trainer.py``:
    dppo_mask_low = dppo_mask_high = 0.2, adv_tau = 1, kl_tau = 1e-3), the normaliser of ``compute_loss`` /
    ``trainer/rl/train.py`` (``rl_scale`` = the step's loss tokens over all ranks), the advantage of
    ``orchestrator/algo/grpo.py`` ``GRPOAlgorithm.score_group`` (``rewards - rewards.mean()`` per group, no std,
    no length penalty by default) and ``orchestrator/train_sink.py`` ``_prune_zero_advantages``
    (``orchestrator.train.filter_zero_advantages = True``: tokens with advantage exactly 0 leave the loss mask
    and the normaliser). Per token, with ρ_t = π_θ(y_t)/μ(y_t) and d_t = π_θ(y_t) − μ(y_t) (probabilities):

    .. math:: \mathrm{keep}_t = \neg\big([A_t > 0]\,[d_t > 0.2] \;\lor\; [A_t \le 0]\,[d_t < -0.2]\big)

    .. math:: \mathcal L = \frac{1}{N}\sum_t m_t\Big(-\,\mathrm{keep}_t\,\tau_{adv} A_t\,\rho_t
              \;+\; \tau_{KL}\log^2\rho_t\Big), \qquad N = \sum_t m_t,

    m_t the loss mask after the zero-advantage filter; ρ is *not* clipped (the seed's δ cap is not in the code);
    the KL term covers masked (dropped) tokens too. μ is the inference (sampling) policy: vLLM's log-probs when TRL
    has them (``sampling_per_token_logps``), else TRL's ``old_per_token_logps``; when neither exists the update is
    on-policy and ρ ≡ 1 (every token kept, KL 0). Preset: ``loss_type="dapo"`` (the 1/N normaliser),
    ``scale_rewards="none"``, ``epsilon = epsilon_high = inf`` (no clip), ``dppo_mask_low = dppo_mask_high = 0.2``,
    ``adv_tau = 1``, ``kl_tau = 1e-3``, ``filter_zero_advantages=True``, ``vllm_importance_sampling_correction=False``.

    This package's readings where the source is silent: prime-rl never sees a NaN μ (vLLM always returns the
    sampled token's log-prob); TRL marks unavailable ones NaN. Such a token gets μ := π (ratio 1, kept, KL 0),
    TRL's own convention for its importance-sampling ratio, so the loss is never NaN (:func:`dppo_keep_mask` on
    its own keeps a NaN-d token, as prime-rl's comparisons would). prime-rl's group is an example's rollouts;
    here it is TRL's ``num_generations`` group (unscorable rows excluded by TRL's nan-mean).

The losses TRL 1.16's ``GRPOConfig`` implements, as presets (:data:`learners.grpo.presets.TRL_LOSS_PRESETS`; ρ_t =
π_θ(y_t)/π_old(y_t), μ the sampling policy, n_i row i's loss tokens, N the batch's, B its rows; ``sg`` = no
gradient). Most act only off-policy (``num_iterations > 1``, ``steps_per_generation >
gradient_accumulation_steps`` or vLLM sampling): on-policy their ratio is 1 and each trains as its base loss.

``gspo`` (GSPO, arXiv 2507.18071)
    s_i = exp((1/n_i) Σ_t log ρ_t); L = (1/B) Σ_i −min(s_i A_i, clip(s_i, 1 − 3e-4, 1 + 4e-4) A_i)
    (``importance_sampling_level="sequence"``, ``loss_type="grpo"``, ε = 3e-4, ε_high = 4e-4: TRL's paper index).
``cispo`` (CISPO, MiniMax-M1, arXiv 2506.13585)
    L = (1/N) Σ_t −sg(min(ρ_t, ε_max)) A log π_t with ε_max = ``epsilon_high`` = 5 (ScaleRL's value).
``sapo`` (SAPO, arXiv 2511.20347)
    ℓ_t = −(4/τ) σ(τ(ρ_t − 1)) A, τ = 1.0 for A > 0 and 1.05 otherwise, averaged per sequence then over rows.
``luspo`` (LUSPO, arXiv 2602.05261)
    GSPO's s_i and clip, each sequence's loss multiplied by its length: L = (1/B) Σ_i n_i ℓ_i.
``vespo`` (VESPO, arXiv 2602.10693)
    L = (1/N) Σ_t −sg(φ_i) A_i log π_t, φ(w) = e^λ w^k e^{−λw} of w = exp(Σ_t log ρ_t), (k, λ) = (2, 3) for A ≥ 0
    and (3, 2) for A < 0 (TRL's defaults).
``grpo_delta`` (INTELLECT-2, arXiv 2505.07291)
    GRPO with two-sided clipping: ℓ_t = −min(min(ρ_t, δ) A, clip(ρ_t, 1 − ε, 1 + ε) A), δ = 4: a token with A < 0
    and ρ > δ has no gradient.
``grpo_top_entropy`` (Beyond the 80/20 rule, arXiv 2506.01939)
    GRPO whose policy loss keeps only the loss tokens in the top 20 % of the batch's entropies
    (``top_entropy_quantile=0.2``); the normaliser is unchanged.
``grpo_opsm`` (DeepSeek-V3.2, arXiv 2512.02556)
    GRPO with off-policy sequence masking: a row with A < 0 and (1/n_i) Σ_t (log μ_t − log π_t) > δ = 0.5 leaves
    the loss.
``grpo_tis``, ``grpo_mis`` (vLLM sampling correction; only with ``use_vllm``)
    every token's loss times w_t = π_old/μ, truncated, min(w, 2) (Yao et al. 2025, "Your efficient RL framework
    secretly brings you off-policy RL training"), or masked, w outside [0.5, 2] → 0 (IcePop). TRL's default
    (every preset above) is sequence-level masking at 3.

Two advantage estimators replace TRL's advantage in seam 1 (``advantage_estimator``,
:mod:`learners.grpo.advantages`, :data:`learners.grpo.presets.ADVANTAGE_PRESETS`):

``rloo`` (RLOO, arXiv 2402.14740)
    A_i = r_i − mean of the other G − 1 rewards = G/(G − 1)·(r_i − r̄); REINFORCE on the sequence log-probability
    (token sum) with Dr.GRPO's constant normaliser B·L_max (``loss_type="dr_grpo"``: TRL's RLOO loss divided by L_max).
``reinforce_pp`` (REINFORCE++-baseline, arXiv 2501.03262)
    A'_i = r_i − mean(group), then whitened over every loss token of the batch (OpenRLHF): A_i = (A'_i − μ)/σ;
    token-level loss (``loss_type="dapo"``).

How the extras are implemented, through the two seams of :mod:`learners.core.trainer` only:

* Dynamic sampling (seam 1). DAPO over-samples prompts and keeps only groups whose *accuracy* is neither 0 nor 1
  ("filter out prompts with the accuracy equal to 1 and 0"), so the decision is taken on the verifier's verdict
  (``rollout.verdicts``: correct and ended within the budget, :mod:`learners.core.verdicts`, the same verdict
  the accuracy metric counts; only for rows without a puzzle, the reward total without the overlong penalty
  column), not on the total reward: the overlong penalty (or a format bonus) must not make a group of
  all-correct answers look informative. Refilling the batch would mean generating again inside TRL's
  ``_generate``, which the seams exclude. Policy here: **filter, no refill** — the loss mask of every such group
  is set to zero, and the token normaliser (``num_items_in_batch``) is recounted over the kept tokens, so each
  kept token weighs exactly as in a batch made of kept groups only. A batch with no informative group gives a
  zero loss (logged as ``countdown/dynamic_sampling_kept_frac`` = 0). To keep the effective batch size, raise
  ``per_device_train_batch_size`` by 1/kept-fraction.
* Zero-advantage filter (seam 1): tokens whose advantage is exactly 0 leave the loss mask; the base recounts
  ``num_items_in_batch`` after the seam, so they leave the normaliser too (as prime-rl's ``rl_scale``).
* prime-rl's loss (seam 2, ``select_loss_tokens``). TRL's ``_compute_loss`` cannot express −A·ρ without a clip
  nor a term on tokens outside the policy-gradient mask, so both are folded into per-token advantages: with
  ``epsilon = inf`` TRL's surrogate is −ρ·A', and :func:`prime_rl_advantages` sets
  :math:`A'_t = \mathrm{keep}_t\,\tau_{adv}A_t - 2\tau_{KL}\log\rho_t/\rho_t` (detached), whose gradient
  −ρA'∇log π equals the gradient of prime-rl's per-token loss exactly; the DPPO-masked tokens stay in the loss
  mask (they carry the KL term and count in N, as in prime-rl). ρ, d and the mask need π before TRL's forward:
  one extra no-grad forward pass per micro-batch (only when μ exists); it equals the loss's forward pass only
  without dropout (Qwen models have none). TRL's ratio is made π/μ by passing μ as ``old_per_token_logps``.
  The logged ``loss`` is the surrogate's value (its KL part reads 2τ·log ρ instead of τ·log²ρ; the gradient is
  exact); ``prime_rl/is_masked`` and ``prime_rl/mismatch_kl`` (ρ − log ρ − 1) are logged as prime-rl does.
"""

from countdown_env.helpers.lazy_exports import lazy_exports

__all__ = ["GRPOPresetTrainer", "GRPOPresetConfig", "PRESETS", "dppo_keep_mask", "grpo_config", "prime_rl_advantages"]
__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "GRPOPresetConfig": "config",
        "grpo_config": "config",
        "GRPOPresetTrainer": "trainer",
        "dppo_keep_mask": "trainer",
        "prime_rl_advantages": "trainer",
        "PRESETS": "presets",
    },
    globals(),
)
