r"""Contrastive potential advantage shaping (the contrastive-shaping post), on the Countdown base trainer.

Source: "Contrastive potential advantage shaping" (docs/references.md). GRPO gives
every token of a completion the same outcome advantage; this learner adds a per-paragraph term measuring how much
each paragraph moved a scorer model's belief towards the group's correct answers and away from its wrong ones.

For a group of G rollouts of prompt x:

1. Answer bank (:mod:`learners.contrastive.answer_bank`): the submitted answers graded by the verifier,
   B+ correct, B− incorrect, one entry per surface form (whitespace-normalised text: ``5+11``, ``11 + 5`` and
   ``(5 + 11)`` are three entries; identical answers are scored once), sorted so that Φ does not depend on the
   order of the rollouts; rollouts that hit the token budget contribute nothing; the ground truth a* optionally
   joins B+ (``ground_truth_mode``). If B+ or B− is empty the group keeps its plain advantages.
2. Paragraphs (:mod:`learners.contrastive.paragraphs`): each completion's reasoning s_1 … s_|S| split at blank
   lines and every ``max_paragraph_len`` tokens (default 128, the seed's fix for the long-paragraph reward hack).
3. Scores (:mod:`learners.contrastive.scoring`): ℓ_φ(a | x, s_1:n) = summed log-probability, under the scorer φ,
   of the tokens that carry the characters of a, as the policy's tokenizer splits the joint text
   ``"</reasoning>\n<solution>" + a + "</solution>"`` written right after the prefix x, s_1:n (the seed scores
   the solution tokens: ``</solution>`` is not summed), for every a ∈ B+ ∪ B− and n = 0 … |S| (n = 0 is the
   empty prefix, shared by the group).
4. Potential and shaping (:mod:`learners.contrastive.potential`):

   .. math::
       \mathrm{LSE}_\tau(z) = \tau\log\Big(\frac1N\sum_i e^{z_i/\tau}\Big), \qquad
       \Phi_n = \mathrm{LSE}_\tau\{\ell_\phi(a\mid x,s_{1:n})\}_{a\in B^+}
              - \mathrm{LSE}_\tau\{\ell_\phi(a\mid x,s_{1:n})\}_{a\in B^-},

   .. math::
       \bar\Phi_n = \mathrm{clip}(\Phi_n, -5, 5), \qquad
       A^{\mathrm{shape}}_n = \beta(\gamma\bar\Phi_n - \bar\Phi_{n-1}), \quad \beta = 0.1,\ \gamma = 0.99,

   and the advantage of every token t of paragraph n of rollout i becomes :math:`\hat A_i + A^{\mathrm{shape}}_n`
   (not divided by the paragraph's length). :math:`\hat A_i` is the base learner's group-relative advantage.
   Φ̄ is the clipped potential (not normalised over the group); Φ̄_0 is the potential of the empty prefix.

The scorer φ is ``"frozen"`` (``scorer_model_name_or_path``, or by default a copy of the initial policy — the
seed's post-SFT checkpoint) or ``"moving"`` (the current policy, no gradient). Engines: ``"prefix_shared"`` (KV cache
built once per rollout, the default), ``"naive"`` (the reference), ``"vllm"`` (vLLM's GPU or CPU build: the
policy's colocated vLLM engine for a moving scorer, or an engine of its own on ``scorer_model_name_or_path`` for a
frozen one; prefix-cache reads up to each span, :class:`~learners.contrastive.scoring.VLLMScorer`). Every
scoring call logs ``contrastive/scorer_{requests,prompt_tokens,cached_tokens,reads_off,reruns}`` with the vLLM
engine.

Base learner. Seed 000 ran the shaping on prime-rl's defaults ("I did not change any of its parameters"), so the
learner is a :class:`~learners.grpo.GRPOPresetTrainer` whose preset is ``base_learner`` (:class:`ContrastiveConfig`):
``"prime_rl"`` (default; registry name ``contrastive``): Â_i = r_i − mean(group) (no std scaling), then prime-rl's
loss — DPPO binary-TV mask, −A·π/μ on kept tokens, 1e-3·log²(π/μ) on all, zero-advantage tokens filtered — on the
*shaped* per-token advantages (prime-rl masks and filters per token, so shaping enters the mask's sign test and the
filter). ``"grpo"`` (registry name ``contrastive_grpo``): TRL-default GRPO (std-scaled advantages, PPO clip), for
ablation; with binary rewards std scaling roughly doubles Â, so β = 0.1 is about half as strong relative to it.

The only change w.r.t. the GRPO learner is ``shape_batch`` (seam 1): it replaces the (B,) advantages by (B,T)
ones, then runs the GRPO learner's own seam 1 on them.
"""

from countdown_env.helpers.lazy_exports import lazy_exports

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
    globals(),
)
