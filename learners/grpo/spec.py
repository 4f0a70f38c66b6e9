"""The GRPO learner's registration: one learner per preset (:mod:`learners.grpo.presets`), the logged quantities that
show each preset's mechanism acting, and its config file. Torch-free: the registry imports it to list learners."""

from __future__ import annotations

from pathlib import Path

from learners.core.spec import AlgorithmSpec, LearnerSpec, Mechanism

from .presets import PRESETS

DESCRIPTIONS: dict[str, str] = {
    "grpo": "GRPO: group-std-scaled advantages, per-sequence token mean",
    "dr_grpo": "Dr.GRPO: no std scaling, constant length normaliser",
    "dapo": "DAPO: clip-higher, token-level loss, overlong shaping, dynamic sampling",
    "prime_rl": "prime-rl's default loss: DPPO binary-TV mask 0.2/0.2, -A*ratio, 1e-3 log^2 KL",
    # the losses of TRL 1.16's GRPOConfig and two advantage estimators (presets.py: TRL_LOSS_PRESETS,
    # ADVANTAGE_PRESETS; the equations in the package docstring)
    "gspo": "GSPO: sequence-level ratio exp(mean log π/π_old), clip 3e-4/4e-4",
    "cispo": "CISPO: clipped, detached IS weight min(ρ, 5) times A·log π",
    "sapo": "SAPO: soft temperature gate 4/τ·σ(τ(ρ-1)) instead of the clip",
    "luspo": "LUSPO: GSPO's sequence ratio, each sequence's loss summed over its tokens",
    "vespo": "VESPO: Gamma weight φ(w) of the sequence ratio times A·log π",
    "grpo_delta": "GRPO + INTELLECT-2's two-sided clipping (ratio capped at δ = 4)",
    "grpo_top_entropy": "GRPO on the top 20 % highest-entropy tokens only (80/20 rule)",
    "grpo_opsm": "GRPO + DeepSeek-V3.2 off-policy sequence masking (A < 0 and KL > 0.5: dropped)",
    "grpo_tis": "GRPO + token-level truncated vLLM importance sampling, C = 2",
    "grpo_mis": "GRPO + token-level masked vLLM importance sampling (IcePop), [0.5, 2]",
    "rloo": "RLOO: leave-one-out baseline G/(G-1)·(r - mean r), sequence-sum REINFORCE",
    "reinforce_pp": "REINFORCE++-baseline: group mean, then token-level whitening over the batch",
}
"""One learner per preset, named as the preset (tests/learners/test_trl_presets.py checks every preset has one)."""

CLIP = Mechanism("clip_ratio/region_mean", "PPO clip: share of loss tokens clipped")
DPPO = (
    Mechanism("prime_rl/is_masked", "DPPO mask: share of loss tokens masked"),
    Mechanism("prime_rl/mismatch_kl", "KL term: mean rho - log rho - 1 per loss token", changes=False),
)
MECHANISMS: dict[str, tuple[Mechanism, ...]] = {
    "grpo": (CLIP,),
    "dr_grpo": (CLIP,),
    "dapo": (
        CLIP,
        Mechanism("countdown/dynamic_sampling_kept_frac", "dynamic sampling: share of groups dropped", complement=True),
    ),
    "prime_rl": DPPO,
    # the TRL-loss presets: TRL's own metrics where it logs one
    **{name: (CLIP,) for name in ("gspo", "luspo", "rloo", "reinforce_pp")},
    "cispo": (Mechanism("cispo_clip_ratio", "CISPO: share of loss tokens whose IS weight is clipped"),),
    "vespo": (Mechanism("vespo/phi_seq_mean", "VESPO: mean Gamma weight phi(w)", changes=False),),
    "grpo_tis": (CLIP, Mechanism("sampling/importance_sampling_ratio/max", "vLLM IS weight (max)", changes=False)),
    "grpo_mis": (
        CLIP,
        Mechanism("sampling/importance_sampling_ratio/min", "vLLM IS weight (min; 0 = masked)", changes=False),
    ),
}
"""The mechanism quantities of each preset (the PPO clip is TRL's own metric). SAPO's gate, δ-clipping
(``grpo_delta``), the entropy mask (``grpo_top_entropy``) and off-policy masking (``grpo_opsm``) log nothing of their
own in TRL 1.16, so they have none; the vLLM IS weights are logged only when vLLM generates."""

COMPARED = ("grpo", "dr_grpo", "dapo", "prime_rl")
"""The presets ``countdown compare`` runs by default (the others on request: ``--learners``)."""

SPEC = AlgorithmSpec(
    learners={
        name: LearnerSpec(
            __package__, "GRPOPresetConfig", "GRPOPresetTrainer", text, PRESETS[name], MECHANISMS.get(name, ()),
            compare_default=name in COMPARED,
        )
        for name, text in DESCRIPTIONS.items()
    },
    config_sources=(Path(__file__).with_name("config.py"),),
)
