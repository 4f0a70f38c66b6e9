"""T-SPMO's config: objective, L2 anchor and replay (Sec. 3.3 and Table 6; see the package docstring)."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..core.config import CountdownConfig

_OBJECTIVES = ("log_prob", "prob")


_LOSS_TYPES = ("dapo", "bnpo")


_L2_ANCHORS = ("init", "zero")


@dataclass
class TSPMOConfig(CountdownConfig):
    """``GRPOConfig`` plus T-SPMO's hyperparameters (arXiv 2504.20834, Sec. 3.3 and Table 6).

    Parameters:
        tspmo_objective: ``"log_prob"`` (default, policy gradient Σ A·log π with the clipped ratio) or ``"prob"``
            (the printed Eq. 10, Σ A·π, for ablation).
        l2_coef: λ of the L2 penalty λ‖θ − θ_0‖² on the trainable parameters, divided by |U| like the policy-gradient
            term so that λ means what it means in the paper's Σ_U objective (0 disables; the paper: 0.01).
        l2_anchor: θ_0: ``"init"`` (values at construction) or ``"zero"`` (plain ‖θ‖², the paper's LoRA form).
        replay_success: C_success, restarts per prompt and step from stored successful completions.
        replay_failure: C_failure, restarts per prompt and step from stored failed completions.
        replay_capacity: completions kept per prompt and kind in the replay buffer.
        replay_min_prefix: the fewest completion tokens a restart keeps (>= 1).
        success_threshold: replay's success is a correct answer (the paper's exact-match reward): on every row that
            carries a puzzle, the verifier's verdict with a completion cut at the budget counting as wrong
            (:mod:`learners.core.verdicts`), whatever the reward functions pay (a DAPO overlong penalty or a format
            bonus changes nothing). Only rows without a puzzle (a dataset without ``numbers``/``target``, no
            environment puzzle) have no verdict; for them a total reward >= this counts as a success, the
            exact-match reward read as 1 (Countdown's correct answer scores 1).
        replay_seed: seed of the replay plans (the same on every process).
        loss_type: ``"dapo"`` (default: divide by the unique transitions of the generation batch) or ``"bnpo"``.
    """

    tspmo_objective: str = field(
        default="log_prob",
        metadata={"help": "'log_prob' (policy gradient, default) or 'prob' (printed Eq. 10, ablation)."},
    )
    l2_coef: float = field(default=0.0, metadata={"help": "L2 penalty coefficient on the trainable parameters."})
    l2_anchor: str = field(default="init", metadata={"help": "'init' (θ - θ_0) or 'zero' (θ) for the L2 penalty."})
    replay_success: int = field(default=0, metadata={"help": "C_success: restarts per prompt from successes."})
    replay_failure: int = field(default=0, metadata={"help": "C_failure: restarts per prompt from failures."})
    replay_capacity: int = field(default=8, metadata={"help": "Completions kept per prompt and kind."})
    replay_min_prefix: int = field(default=1, metadata={"help": "Fewest completion tokens a restart keeps."})
    success_threshold: float = field(
        default=1.0,
        metadata={"help": "Only for rows without a puzzle (no verdict): reward counted as success. Else correctness."},
    )
    replay_seed: int = field(default=0, metadata={"help": "Seed of the replay plans."})

    def __post_init__(self):
        super().__post_init__()
        if self.tspmo_objective not in _OBJECTIVES:
            raise ValueError(f"tspmo_objective must be one of {_OBJECTIVES}, got {self.tspmo_objective!r}")
        if self.loss_type not in _LOSS_TYPES:
            raise ValueError(
                f"T-SPMO needs a token-level normaliser, loss_type in {_LOSS_TYPES}; got {self.loss_type!r} "
                "(per-sequence normalisers weight a transition by the length of its representative completion)"
            )
        if self.l2_coef < 0:
            raise ValueError(f"l2_coef must be >= 0, got {self.l2_coef}")
        if self.l2_anchor not in _L2_ANCHORS:
            raise ValueError(f"l2_anchor must be one of {_L2_ANCHORS}, got {self.l2_anchor!r}")
        for name in ("replay_success", "replay_failure"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0, got {getattr(self, name)}")
        if self.replay_capacity < 1 or self.replay_min_prefix < 1:
            raise ValueError("replay_capacity and replay_min_prefix must be >= 1")
        if self.importance_sampling_level != "token":
            raise ValueError("T-SPMO's ratios are per transition: importance_sampling_level must be 'token'")
