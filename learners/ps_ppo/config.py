"""PS-PPO's config: the cutoff design's hyperparameters (Appendix I defaults; see the package docstring)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..core.config import CountdownConfig

CUTOFF_STRATEGIES = ("optimized", "uniform", "time_prior", "heuristic")


_MASK_WEIGHTED = {"dapo", "cispo", "dr_grpo", "luspo"}


_ADVANTAGE_WEIGHTED = {"grpo", "sapo", "bnpo"}


@dataclass
class PSPPOConfig(CountdownConfig):
    r"""``GRPOConfig`` plus PS-PPO's cutoff design (PS-PPO, arXiv 2606.29758, Appendix I defaults).

    Parameters:
        budget (`float`, defaults to 128): B, the expected number of kept tokens per completion, E[H].
        cutoff_strategy (`str`, defaults to "optimized"): one of "optimized", "uniform", "time_prior",
            "heuristic" (see the module docstring).
        uncertainty_top_k (`int`, defaults to 16): top-k of the next-token distributions in the uncertainty bound.
        min_survival (`float`, defaults to 1e-3): floor ε on ξ (lowered automatically to B/(2T), or
            (B−1)/(2(T−1)) with ``first_token_always``, for very long completions so that the budget stays feasible).
        first_token_always (`bool`, defaults to True): ξ_1 = 1, every completion keeps its first token.
        success_threshold (`float`, defaults to 1.0): the uncertainty bound's success is a correct answer (the paper's
            binary correctness reward): on every row that carries a puzzle, the verifier's verdict with a completion
            cut at the budget counting as wrong (:mod:`learners.core.verdicts`), whatever the reward functions pay (a
            DAPO overlong penalty or a format bonus changes nothing). Only rows without a puzzle (a dataset without
            ``numbers``/``target``, no environment puzzle) have no verdict; for them a total reward ≥ this counts as a
            success, a binarisation of the reward (the paper binarises non-binary rewards for the same estimator,
            Appendix G).
        proxy_batch_size (`int`, defaults to 8): rows per forward in the no-grad proxy pass.
        skip_zero_advantage (`bool`, defaults to True): skip rows with zero advantage when beta = 0.
        epsilon (`float`, defaults to 0.1): PPO clip range (Appendix I).
    """

    budget: float = field(default=128.0, metadata={"help": "B: expected kept tokens per completion."})
    cutoff_strategy: str = field(default="optimized", metadata={"help": f"One of {CUTOFF_STRATEGIES}."})
    uncertainty_top_k: int = field(default=16, metadata={"help": "Top-k in the reward-uncertainty bound."})
    min_survival: float = field(default=1e-3, metadata={"help": "Floor on the survival probabilities."})
    first_token_always: bool = field(default=True, metadata={"help": "Fix xi_1 = 1."})
    success_threshold: float = field(
        default=1.0,
        metadata={"help": "Only for rows without a puzzle (no verdict): reward counted as success. Else correctness."},
    )
    proxy_batch_size: int = field(default=8, metadata={"help": "Rows per forward of the proxy pass."})
    skip_zero_advantage: bool = field(default=True, metadata={"help": "Skip zero-advantage rows if beta = 0."})
    epsilon: float = field(default=0.1, metadata={"help": "PPO clip range (PS-PPO, arXiv 2606.29758, Appendix I)."})
    loss_type: str = field(default="dapo", metadata={"help": "TRL loss type (dapo keeps the full normaliser)."})

    def __post_init__(self):
        super().__post_init__()
        if not (np.isfinite(self.budget) and self.budget >= 1):
            raise ValueError(f"budget must be a finite number >= 1, got {self.budget}")
        if self.first_token_always and self.budget <= 1:
            raise ValueError(f"first_token_always spends 1 of the budget on ξ_1: budget must be > 1, got {self.budget}")
        if self.cutoff_strategy not in CUTOFF_STRATEGIES:
            raise ValueError(f"cutoff_strategy must be one of {CUTOFF_STRATEGIES}, got {self.cutoff_strategy!r}")
        if self.uncertainty_top_k < 1 or self.proxy_batch_size < 1:
            raise ValueError("uncertainty_top_k and proxy_batch_size must be >= 1")
        if not 0.0 < self.min_survival < 1.0:
            raise ValueError(f"min_survival must lie in (0, 1), got {self.min_survival}")
        if self.loss_type not in _MASK_WEIGHTED | _ADVANTAGE_WEIGHTED:
            raise ValueError(
                f"PS-PPO supports loss_type in {sorted(_MASK_WEIGHTED | _ADVANTAGE_WEIGHTED)}, got {self.loss_type!r}"
            )
        if self.loss_type in _ADVANTAGE_WEIGHTED and self.beta != 0.0:
            raise ValueError(
                f"loss_type={self.loss_type!r} normalises by the kept-token count, so the KL term cannot be "
                "reweighted without bias: use beta=0, or loss_type='dapo' (full-count normaliser) with beta"
            )
        sequence_level = {
            "importance_sampling_level='sequence'": self.importance_sampling_level != "token",
            "top_entropy_quantile < 1": self.top_entropy_quantile < 1.0,
            "off_policy_mask_threshold": self.off_policy_mask_threshold is not None,
            "entropy_coef != 0": bool(getattr(self, "entropy_coef", 0.0)),
        }
        rejected = [name for name, on in sequence_level.items() if on]
        if rejected:
            raise ValueError(f"PS-PPO's truncated estimator is unbiased only for token-level losses; unset {rejected}")
