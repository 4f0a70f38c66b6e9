r"""Oracle-shaped learner: the contrastive learner's potential-based shaping with the exact step oracle as Φ.

The contrastive learner (:mod:`learners.contrastive`) shapes each paragraph of a completion by how far a scorer
model's belief moved towards the group's correct answers. On Countdown the value of every partial state is
computable exactly (:class:`countdown_env.solving.oracle.StepOracle`), so the same shaping can use the true value:
an upper bound that no learned scorer can beat, to hold the contrastive scorer against.

For a completion with paragraphs s_1 … s_|S| (split as the contrastive learner splits them, at blank lines and every
``max_paragraph_len`` tokens: :func:`learners.contrastive.paragraphs.split_paragraphs`), let σ_n be the state of the
reasoning after paragraph n: the multiset of values at hand once every unit of the reasoning that ends within
s_1:n has been read (:mod:`countdown_env.steps.labels`: chains taken, probes dropped, ``Back up.`` and ``Dead end.``
undone); σ_0 is the given numbers. Then

.. math::
    \Phi_n = c\,(2\cdot\mathbb 1[\text{target reachable from } \sigma_n] - 1) \in \{-c, +c\},
    \qquad A^{\mathrm{shape}}_n = \beta(\gamma\Phi_n - \Phi_{n-1}),

with c = ``potential_scale`` (default 5, the contrastive learner's clip, so both potentials span the same range),
β = 0.1, γ = 0.99 as there, and every token of paragraph n gets :math:`\hat A_i + A^{\mathrm{shape}}_n`
(:func:`learners.contrastive.potential.shaping_terms`, :func:`~learners.contrastive.potential.token_shaping`).
:math:`\hat A_i` is the base learner's group-relative advantage; the base loss is prime-rl's, as the contrastive
learner's default (``oracle_shaped``; registry defaults from :data:`learners.grpo.presets.PRESETS`).

Refusal: a completion whose reasoning holds a unit the step grammar cannot read
(:mod:`countdown_env.steps.grammar`) has no known state after it, so its potential is not guessed: the row keeps its
plain advantage, and ``oracle_shaped/unparsed_row_frac`` counts such rows. A row without a puzzle cannot be shaped
at all: the learner refuses the batch with a clear error (the dataset needs ``numbers`` and ``target``).

The only change w.r.t. the GRPO learner is ``shape_batch`` (seam 1).
"""

from countdown_env.helpers.lazy_exports import lazy_exports

__all__ = ["OracleShapedConfig", "OracleShapedTrainer", "oracle_potentials"]
__getattr__, __dir__ = lazy_exports(
    __name__,
    {"OracleShapedConfig": "config", "OracleShapedTrainer": "trainer", "oracle_potentials": "potential"},
    globals(),
)
