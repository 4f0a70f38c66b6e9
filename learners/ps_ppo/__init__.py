r"""PS-PPO: prefix-sampling PPO with unbiased, budgeted random truncation (PS-PPO, arXiv 2606.29758).

Estimator (Section 3.2, Appendix B). Every completion :math:`i` gets a random cutoff :math:`H_i` with survival
function :math:`\xi_t = P(H \ge t)`, resampled at every update; only tokens :math:`t \le H_i` are run forward and
backward, and each kept token's loss is weighted by :math:`1/\xi_t`:

.. math::
    \hat g = \sum_i \sum_{t \le H_i} \frac{\ell_{i,t}}{\xi_t}
    = \sum_i \sum_t \frac{\mathbb 1[H_i \ge t]}{\xi_t}\,\ell_{i,t},
    \qquad \mathbb E_H[\hat g] = \sum_i\sum_t \ell_{i,t},

where :math:`\ell_{i,t}` is TRL's per-token clipped PPO term (clip :math:`\varepsilon = 0.1`, Appendix I) of
completion :math:`i` at step :math:`t`, already divided by its loss-type normaliser. The estimator is unbiased for
any :math:`\xi > 0` as long as :math:`H` is drawn independently of the sampled tokens given the batch statistics,
which holds here (ξ comes from the group's rollouts, H from a separate generator).

Normaliser (how unbiasedness survives TRL's loss types). The normaliser must stay the *untruncated* token count:

* ``dapo`` (default), ``cispo``: TRL divides by ``num_items_in_batch``, counted at generation time over full
  completions; the learner never changes it (the cutoff is applied per micro-batch, after the recount), and the
  weights :math:`\mathbb 1[t\le H]/\xi_t` go into the loss mask (``tool_mask``). ``dr_grpo`` (constant
  normaliser) and ``luspo`` (per-row sums) are handled the same way. The KL term (``beta``) is weighted too, so the
  whole loss is unbiased.
* ``grpo``, ``sapo`` (per-completion mean) and ``bnpo`` (micro-batch token mean) divide by the loss-mask sum,
  which a weighted mask would turn into a biased ratio estimator. There the mask stays 0/1 and the weight moves
  into per-token advantages, :math:`A_{i,t} = A_i\,\frac{1}{\xi_t}\,\frac{K_i}{L_i}` (``grpo``/``sapo``, with
  :math:`K_i` kept and :math:`L_i` full tokens of row *i*) or :math:`A_i\frac{1}{\xi_t}\frac{\sum K}{\sum L}`
  (``bnpo``): these losses are positively homogeneous in :math:`A`, so :math:`\ell'_{i,t}/K_i =
  \ell_{i,t}/(\xi_t L_i)`. The KL term is not, so these loss types require ``beta = 0``.

Options that look at whole sequences (``importance_sampling_level="sequence"``, ``top_entropy_quantile < 1``,
``off_policy_mask_threshold``, ``entropy_coef``) and ``loss_type="vespo"`` would turn the truncated sum into a
different estimator and are rejected with a clear error.

Survival design (Section 3.3, Algorithm 1 lines 7-9): per prompt :math:`x`,

.. math::
    \min_\xi \sum_t \frac{w_t(x)}{\xi_t}\ \ \text{s.t.}\ \ \sum_t \xi_t = B,\ 1 \ge \xi_1 \ge \dots \ge \xi_T > 0,
    \qquad w_t(x) = \bar\gamma_t(x)\,\bar u_t(x),

solved exactly by :func:`learners.ps_ppo.survival.survival_probabilities` (√-allocation, PAV, saturation), with the
forward-only weights of :mod:`learners.ps_ppo.design_weights` (score-norm proxy :math:`\bar u`, reward-uncertainty bound
:math:`\bar\gamma`, top-k 16) computed in one no-grad pass of the sampling policy over the group's rollouts.
:math:`T` is the group's longest completion. ``first_token_always`` fixes :math:`\xi_1 = 1` (Section 3.2).

Cutoff strategies (the seed's ablation, Figure 3). The seed names them; its formulas did not survive, so these
are this package's definitions, each a weight vector fed to the same solver at the same budget:

* ``optimized`` (default): :math:`w_t = \bar\gamma_t\bar u_t` — Algorithm 1.
* ``uniform``: :math:`w_t = (T - t + 1)^2`, i.e. a linear survival function; at :math:`B = (T+1)/2` it is
  exactly :math:`H \sim \mathcal U\{1..T\}`, the seed's matched-budget setting (T = 256, B = 128).
* ``time_prior``: :math:`w_t = 1/t` (:math:`\xi_t \propto t^{-1/2}`), a fixed preference for early tokens.
* ``heuristic``: the same proxies as ``optimized`` but linear instead of √ allocation (:math:`\xi_t \propto w_t`,
  solver on :math:`w_t^2`) — the "intuitive" allocation the seed's numeric comparison contrasts with √.

Compute: ``truncate_to_loss_tokens`` is on, so the base trainer splits the micro-batch into length buckets cut
after each row's last kept token (:mod:`learners.core.prefix_batches`) and the forward and backward really shrink.
Rows whose advantage is exactly 0 contribute no gradient when ``beta = 0`` and are skipped
(``skip_zero_advantage``). Defaults from Appendix I: budget B = 128, top-k 16, clip 0.1 (and K = 8 generations,
per-device batch 16 in the paper; set those in the config).
"""

from countdown_env.helpers.lazy_exports import lazy_exports

__all__ = [
    "CUTOFF_STRATEGIES",
    "PSPPOConfig",
    "PSPPOTrainer",
    "sample_cutoff_weights",
    "strategy_weights",
    "survival_probabilities",
]
__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "PSPPOConfig": "config",
        "CUTOFF_STRATEGIES": "config",
        "PSPPOTrainer": "trainer",
        "strategy_weights": "design_weights",
        "sample_cutoff_weights": "survival",
        "survival_probabilities": "survival",
    },
    globals(),
)
