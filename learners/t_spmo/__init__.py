r"""T-SPMO: token-level prefix-matching policy optimisation with prefix-trie advantages and replay.

Seed 002 ("Token-Efficient RL for LLM Reasoning", Sec. 3.3) with the referee's corrections. For each prompt,
|G| completions are sampled and arranged in a prefix trie (:mod:`learners.t_spmo.prefix_trie`); every unique
(prefix p, next token v) transition U gets the advantage

.. math::  A(v|p) = \bar R(G_{p\circ v}) - \bar R(G_p)      \qquad \text{(Eqs. 7-9)}

**Objective (corrected).** The paper prints :math:`J = \sum_{(p,v)\in U} \pi_\theta(v|p)\,A(v|p)` (Eq. 10), whose
gradient :math:`\sum A\,\nabla\pi` is not a policy gradient (referee, major comment 2). The default here is the
policy-gradient form, with TRL's clipped ratio against the sampling policy when a batch is reused
(``num_iterations > 1``):

.. math::  J(\theta) = \frac{1}{|U|} \sum_{(p,v)\in U} \min\big(\rho\,A(v|p),\ \mathrm{clip}(\rho, 1-\epsilon,
           1+\epsilon_{high})\,A(v|p)\big), \qquad \rho = \pi_\theta(v|p) / \pi_{\theta_{old}}(v|p)

whose gradient on-policy (ρ = 1) is :math:`\frac{1}{|U|}\sum_U A(v|p)\,\nabla\log\pi_\theta(v|p)`.
**Normalisation:** |U| counts the unique transitions of the whole generation batch, over all prompts and
processes (TRL's ``loss_type="dapo"`` with ``num_items_in_batch`` = the number of loss tokens), so the update is
the paper's sum over U divided by a constant of the batch — every unique transition weighs the same, independent
of the completion it was found in, and gradient accumulation or several processes do not change the scale.
``loss_type="bnpo"`` (divide by the loss tokens of each micro-batch) is also accepted; per-sequence normalisers
(``grpo``, ``dr_grpo``, ...) would weight transitions by the length of an arbitrary representative and are rejected.

``tspmo_objective="prob"`` keeps the printed Eq. 10 for ablation: the per-token advantage becomes
:math:`A(v|p)\,\pi_{\theta_{old}}(v|p)`, so that ρ·A·π_old = A·π_θ and the gradient is
:math:`\frac{1}{|U|}\sum_U A\,\nabla\pi_\theta` exactly (with clipping when ρ leaves the trust region).

**Regularisation.** ``beta > 0`` adds TRL's per-token KL(π_θ‖π_ref) estimator on the loss tokens; ``l2_coef > 0``
adds the paper's L2 term with θ_0 = the values at construction (``l2_anchor="init"``) or 0 (``"zero"``: the paper's
:math:`\lambda\lVert\theta_{LoRA}\rVert^2`, meant for adapters). The paper's objective sums over U,
:math:`\sum_U A\,\pi_\theta - \lambda\lVert\theta-\theta_0\rVert^2`; here the policy-gradient term is divided by
|U|, so the L2 term is divided by the same |U|:

.. math::  \mathcal L(\theta) = -\frac{1}{|U|}\Big(\sum_{(p,v)\in U} A(v|p)\log\pi_\theta(v|p)
           \;-\; \lambda\lVert\theta-\theta_0\rVert^2\Big),

i.e. the paper's Σ_U objective times the constant 1/|U|: λ keeps the paper's meaning (the L2-to-policy-gradient
weight ratio is λ for any |U|; without the division the paper's λ = 0.01 would act |U| — often thousands — times
stronger). |U| is the normaliser TRL's loss uses for the step (``TSPMOTrainer.unique_transitions``). The term is
added after TRL's loss through the base's seam-2 hook ``loss_penalty`` (the base scales it for gradient
accumulation). Works with a ``peft`` LoRA config passed as ``peft_config``.

**Replay** (``replay_success``/``replay_failure`` = C_success/C_failure > 0; :mod:`learners.t_spmo.replay` states the
rules). Done in seam 1 without overriding TRL's generation: after TRL generated and scored the batch, restart
plans are drawn (identically on every process, from the gathered batch and a seeded generator), each process
samples the continuations of its share through :func:`learners.sampling.trainer_sampler` (the trainer's
colocated vLLM engine or vLLM server when ``use_vllm``, else ``generate`` on the unwrapped policy; TRL's sampling
settings), scores them with the trainer's own reward functions (so the scale matches the batch), computes the
old/reference log-probs TRL would have, and appends the rows to the batch (prompt side left-padded, completion
side right-padded). Every process appends the same number of rows, rounded up so that the
batch still splits into ``steps_per_generation`` micro-batches; unused slots are filler rows with an empty loss
mask. Replayed rows count in the trie only from their restart depth (see :mod:`learners.t_spmo.prefix_trie`).
Unsupported with replay: tools, environments, ``rollout_func``, multimodal inputs, model-based or async rewards.
With sharded parameters (FSDP, DeepSpeed ZeRO-3) a forward is a collective of all processes, while each process
replays its own number of rows: every process then samples the same number of rows (``slots``, the missing ones
one-token fillers that are dropped), from the policy TRL gathers for generation.

**Large groups.** The trie is built in seam 1 over the whole generation batch, so a group may exceed a
micro-batch: e.g. |G| = 50 with ``per_device_train_batch_size=10, steps_per_generation=5,
gradient_accumulation_steps=5`` trains on one prompt per optimiser step in five micro-batches of ten rows
(forward passes, old/ref log-probs and replay generation all run in micro-batches of that size).
Seam 2 runs TRL's loss only up to each row's last loss token (``truncate_to_loss_tokens``: the base's bucketed
prefixes, exact under causal attention), so the many trailing tokens a trie leaves without loss cost nothing.

**Estimator statistics** (referee, major comment 4) are logged every generation batch under ``tspmo/``:
unique transitions, share of the loss tokens (``loss_token_share``), share resting on one completion
(``singleton_share``), mean |G_{p∘v}|, share of zero advantages, mean |A|, deepest branching depth, replay counts.
"""

from countdown_env.helpers.lazy_exports import lazy_exports

__all__ = ["TSPMOConfig", "TSPMOTrainer", "prefix_advantages"]
__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "TSPMOConfig": "config",
        "TSPMOTrainer": "trainer",
        "prefix_advantages": "prefix_trie",
    },
    globals(),
)
