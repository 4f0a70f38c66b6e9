r"""S-GRPO: GRPO on a stochastic subset of each completion's tokens (arXiv 2504.20834, Section 3.2), corrected ratio.

For a group of G completions :math:`y_i` of prompt :math:`x` with group-relative advantages :math:`\hat A_i`,
S-GRPO keeps a token subset :math:`S_i` of each completion in the loss:

* the first :math:`\alpha` completion tokens are always in :math:`S_i`;
* each later token enters independently with probability :math:`P`;
* selection stops once :math:`|S_i| = k` (``k`` counts all loss tokens, the first α included).

The objective, with the **corrected** ratio (the referee report on arXiv 2504.20834, major comment 1):

.. math::
    J(\theta) = \frac{1}{G}\sum_i \frac{1}{|S_i|}\sum_{t\in S_i}
        \Big[\min\big(\rho_{i,t}\hat A_i,\ \operatorname{clip}(\rho_{i,t}, 1-\varepsilon, 1+\varepsilon)\hat A_i\big)
        - \beta\, \mathbb D_{KL,t}\Big],
    \qquad \rho_{i,t} = \frac{\pi_\theta(y_{i,t}\mid x, y_{i,<t})}{\pi_{\theta_{old}}(y_{i,t}\mid x, y_{i,<t})}.

What the paper printed wrong: its Eq. 5 writes the ratio as :math:`\pi_\theta/\pi_\theta` with "no grad", which is
identically 1, leaving only the KL penalty and no policy gradient. The ratio must use the frozen policy
:math:`\pi_{\theta_{old}}` that sampled the group, as in its Eq. 3. TRL implements exactly that: it stores
:math:`\log\pi_{\theta_{old}}` when the batch is reused (``num_iterations > 1``, or more optimiser steps than
generations), and otherwise uses ``per_token_logps.detach()``, which *is* :math:`\pi_{\theta_{old}}` at the only
update (value 1, gradient :math:`\nabla\log\pi_\theta`). :math:`\mathbb D_{KL}` is TRL's k3 estimator against the
reference model (``beta``; the seed uses 0.01).

Implementation (seams of :mod:`learners.core.trainer` only): the subset is drawn once per generation batch in
``shape_batch`` and stored as the loss mask (``tool_mask``), never by zeroing the attention mask; the base
trainer recounts ``num_items_in_batch`` from it. ``loss_type="grpo"`` (default here) averages over
:math:`S_i` per completion as above.

The masking alone saves no FLOPs: the forward and backward passes still run over every token (PS-PPO, arXiv 2606.29758,
Figure 2(d)). ``truncate_after_last_selected=True`` is the compute-saving variant: through the base's seam-2
switch ``truncate_to_loss_tokens``, each micro-batch is sorted into buckets and cut after each bucket's last
selected token (:mod:`learners.core.prefix_batches`). Under causal attention the loss is unchanged; only the tokens
after the last selected one are no longer run.

Hyperparameters from the seed: α = 100 (SVAMP) / 50 (multiplication), k = 100, P not reported, β = 0.01,
lr 1e-4 (LoRA). Defaults here: α = 50, k = 100, P = 0.5, β = 0 (TRL's; set ``beta=0.01`` to match the seed).
"""

from countdown_env.helpers.lazy_exports import lazy_exports

__all__ = ["SGRPOConfig", "SGRPOTrainer", "s_grpo_token_mask"]
__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "SGRPOConfig": "config",
        "SGRPOTrainer": "trainer",
        "s_grpo_token_mask": "trainer",
    },
    globals(),
)
