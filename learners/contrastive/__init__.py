r"""Contrastive potential advantage shaping (the contrastive-shaping post), on the Countdown base trainer.

Source: "Contrastive potential advantage shaping" (docs/references.md). GRPO gives
every token of a completion the same outcome advantage; this learner adds a per-paragraph term measuring how much
each paragraph moved a scorer model's belief towards the group's correct answers and away from its wrong ones.

For a group of G rollouts of prompt x:

1. Answer bank (:mod:`learners.contrastive.answer_bank`): the submitted answers graded by the verifier,
   B+ correct, B− incorrect, deduplicated by canonical form; rollouts that hit the token budget contribute
   nothing; the ground truth a* optionally joins B+ (``ground_truth_mode``). If B+ or B− is empty the group
   keeps its plain GRPO advantages.
2. Paragraphs (:mod:`learners.contrastive.paragraphs`): each completion's reasoning s_1 … s_|S| split at blank
   lines and every ``max_paragraph_len`` tokens (default 128, the seed's fix for the long-paragraph reward hack).
3. Scores (:mod:`learners.contrastive.scoring`): ℓ_φ(a | x, s_1:n) = summed log-probability, under the scorer φ,
   of the tokens of ``a + "</solution>"`` written right after the prefix x, s_1:n and the bridge
   ``"</reasoning>\n<solution>"``, for every a ∈ B+ ∪ B− and n = 0 … |S| (n = 0 is the empty prefix, shared by
   the group).
4. Potential and shaping (:mod:`learners.contrastive.potential`):

   .. math::
       \mathrm{LSE}_\tau(z) = \tau\log\Big(\frac1N\sum_i e^{z_i/\tau}\Big), \qquad
       \Phi_n = \mathrm{LSE}_\tau\{\ell_\phi(a\mid x,s_{1:n})\}_{a\in B^+}
              - \mathrm{LSE}_\tau\{\ell_\phi(a\mid x,s_{1:n})\}_{a\in B^-},

   .. math::
       \bar\Phi_n = \mathrm{clip}(\Phi_n, -5, 5), \qquad
       A^{\mathrm{shape}}_n = \beta(\gamma\bar\Phi_n - \bar\Phi_{n-1}), \quad \beta = 0.1,\ \gamma = 0.99,

   and the advantage of every token t of paragraph n of rollout i becomes :math:`\hat A_i + A^{\mathrm{shape}}_n`
   (not divided by the paragraph's length). :math:`\hat A_i` is TRL's group-relative advantage.
   Φ̄ is the clipped potential (not normalised over the group); Φ̄_0 is the potential of the empty prefix.

The scorer φ is ``"frozen"`` (``scorer_model_name_or_path``, or by default a copy of the initial policy — the
seed's post-SFT checkpoint) or ``"moving"`` (the current policy, no gradient). Engines: ``"prefix_shared"`` (KV cache
built once per rollout, the default), ``"naive"`` (the reference), ``"vllm"`` (GPU: the policy's colocated vLLM
engine for a moving scorer, or a second engine on ``scorer_model_name_or_path`` for a frozen one).

The only change w.r.t. the base trainer is ``shape_batch`` (seam 1): it replaces the (B,) advantages by (B,T) ones.
"""

from learners.core.lazy import lazy_exports

__all__ = [
    "AnswerBank",
    "ContrastiveConfig",
    "ContrastiveTrainer",
    "build_answer_bank",
    "contrastive_potential",
    "submitted_answer",
    "token_shaping",
]
__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "ContrastiveConfig": "config",
        "ContrastiveTrainer": "trainer",
        "submitted_answer": "trainer",
        "AnswerBank": "answer_bank",
        "build_answer_bank": "answer_bank",
        "contrastive_potential": "potential",
        "token_shaping": "potential",
    },
)
