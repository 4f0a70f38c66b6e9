"""The oracle-shaped learner's config: a GRPO learner config plus the shaping hyperparameters of the contrastive
learner that apply to an exact potential (β, γ, the paragraph cap) and the potential's scale."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..grpo.config import GRPOPresetConfig


@dataclass
class OracleShapedConfig(GRPOPresetConfig):
    r"""A GRPO learner config (the registry applies prime-rl's preset) plus the shaping of
    :mod:`learners.oracle_shaped`.

    Parameters:
        shaping_beta (`float`, defaults to 0.1): β, the scale of the shaping term.
        shaping_gamma (`float`, defaults to 0.99): γ, the PBRS-style discount.
        potential_scale (`float`, defaults to 5.0): c, Φ = +c on a state that can still reach the target, −c else.
        max_paragraph_len (`int`, defaults to 128): split a paragraph every this many tokens.
    """

    shaping_beta: float = field(default=0.1, metadata={"help": "β: scale of the per-paragraph shaping term."})
    shaping_gamma: float = field(default=0.99, metadata={"help": "γ: discount of the potential difference."})
    potential_scale: float = field(
        default=5.0, metadata={"help": "c: the potential is +c where the target is reachable, -c where not."}
    )
    max_paragraph_len: int = field(default=128, metadata={"help": "Split paragraphs every this many tokens."})

    def __post_init__(self):
        super().__post_init__()
        if not self.potential_scale > 0:
            raise ValueError(f"potential_scale must be > 0, got {self.potential_scale}")
        if not 0.0 < self.shaping_gamma <= 1.0:
            raise ValueError(f"shaping_gamma must lie in (0, 1], got {self.shaping_gamma}")
        if self.max_paragraph_len < 1:
            raise ValueError(f"max_paragraph_len must be >= 1, got {self.max_paragraph_len}")
